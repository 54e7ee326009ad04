package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
	"github.com/quotagate/quotagate/test/localcluster"
	"github.com/quotagate/quotagate/test/localinstall"
)

// tick is how often the progress line is printed.
const tick = 500 * time.Millisecond

// steps is how many numbered steps the demo has, for "[n/6]".
const steps = 6

func step(format string, args ...any) {
	fmt.Printf("%s  ==> %s\n", time.Now().Format(clock), fmt.Sprintf(format, args...))
}

// numbered prints step n of steps.
func numbered(n int, format string, args ...any) {
	step("[%d/%d] %s", n, steps, fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	interrupted := ctx // --keep waits for Ctrl-C, not for the timeout
	ctx, cancel := context.WithTimeoutCause(ctx, o.timeout,
		fmt.Errorf("the demo did not finish within --timeout %v (logs are in %s)", o.timeout, o.dir))
	defer cancel()
	if _, err := resource.ParseQuantity(o.cpu); err != nil {
		return fmt.Errorf("--cpu %q: %w", o.cpu, err)
	}
	if err := os.RemoveAll(o.dir); err != nil {
		return fmt.Errorf("emptying %s: %w", o.dir, err)
	}
	binDir := o.binDir
	if binDir == "" {
		binDir = filepath.Join(o.dir, "bin")
		numbered(1, "Building the webhook and manager into %s", binDir)
		err := during(os.Stdout, "building the webhook and manager", func() error { return localinstall.BuildBinaries(ctx, o.root, binDir) })
		if err != nil {
			return withCause(ctx, err)
		}
	} else {
		numbered(1, "The webhook and manager are built, in %s", binDir)
	}
	numbered(2, "Starting a local control plane in %s (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)", filepath.Join(o.dir, "cluster"))
	var cluster *localcluster.Cluster
	err := during(os.Stdout, "starting the control plane", func() (err error) {
		cluster, err = localcluster.Start(ctx, localcluster.Options{Dir: filepath.Join(o.dir, "cluster")})
		return err
	})
	if err != nil {
		return withCause(ctx, err)
	}
	defer func() { _ = cluster.Stop() }()
	numbered(3, "Installing quotagate with Helm (charts/quotagate), webhook and manager as local processes")
	var inst *localinstall.Installation
	err = during(os.Stdout, "installing quotagate", func() (err error) {
		inst, err = localinstall.Install(ctx, cluster, localinstall.Options{BinDir: binDir, Dir: filepath.Join(o.dir, "quotagate"), RepoRoot: o.root})
		return err
	})
	if err != nil {
		return withCause(ctx, err)
	}
	defer func() { _ = inst.Stop() }()

	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return err
	}
	c, err := client.New(cluster.Config(), client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cluster.Config())
	if err != nil {
		return err
	}
	numbered(4, "Namespace %q labelled %s=true, Budget %s/%s with requests.cpu %s", demoNamespace, v1alpha1.EnabledLabel, demoNamespace, budgetName, o.cpu)
	objs := []client.Object{demoNamespaceObject()}
	for _, pc := range priorityClasses() {
		objs = append(objs, pc)
	}
	objs = append(objs, demoBudget(o.cpu, int64(o.jobs)))
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return withCause(ctx, fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err))
		}
	}

	tr, events, err := watchBurst(ctx, cs)
	if err != nil {
		return withCause(ctx, err)
	}
	numbered(5, "Submitting %d Jobs of 1 CPU (every fifth one high priority), running 1-6 s each", o.jobs)
	fmt.Printf("  To watch the queue drain in a browser, in another shell (the page lives while the demo runs; make demo KEEP=1 keeps it):\n")
	fmt.Printf("    KUBECONFIG=%s %s ui -n %s --open\n", cluster.KubeconfigPath(), o.plugin(), demoNamespace)
	for n := range o.jobs {
		if err := c.Create(ctx, burstJob(n)); err != nil {
			return withCause(ctx, fmt.Errorf("creating Job %d: %w", n, err))
		}
	}
	drainStart := time.Now()
	if err := follow(ctx, c, cs, tr, events, o.jobs); err != nil {
		return withCause(ctx, err)
	}
	drained := time.Since(drainStart)
	if err := inst.Err(); err != nil {
		return err
	}
	if err := allJobsSucceeded(ctx, c, o.jobs); err != nil {
		return withCause(ctx, err)
	}
	hard := resource.MustParse(o.cpu)
	peak := resource.NewMilliQuantity(tr.peak, resource.DecimalSI)
	fmt.Println()
	fmt.Printf("All %d Jobs Succeeded in %v (%v from the first submission).\n", o.jobs, time.Since(began).Round(time.Second), drained.Round(100*time.Millisecond))
	fmt.Printf("Peak admitted CPU: %s of requests.cpu %s", peak.String(), hard.String())
	if peak.Cmp(hard) > 0 {
		return fmt.Errorf("the budget was exceeded: %s CPU admitted at once, hard is %s", peak.String(), hard.String())
	}
	fmt.Println(" - never over the budget.")
	fmt.Println()
	if err := newKind(ctx, c, cs, tr, events, o.jobs); err != nil {
		return withCause(ctx, err)
	}
	fmt.Println()
	if !o.keep {
		fmt.Printf("To look around with kubectl, run make demo KEEP=1 (it reuses what this run built), then in another shell:\n")
	} else {
		fmt.Printf("The control plane and quotagate keep running. In another shell:\n")
	}
	fmt.Printf("  export KUBECONFIG=%s\n", cluster.KubeconfigPath())
	fmt.Printf("  %s queue -A          # every queue, through the visibility API\n", o.plugin())
	fmt.Printf("  %s ui -A --open      # the live page: budgets, queues, pods (docs/ui.md)\n", o.plugin())
	fmt.Printf("  kubectl get budgets -A\n  kubectl get pods -n %s\n  kubectl describe pod -n %s job-00-<tab>    # the Waiting events; kubectl describe budget: the Admitted events\n", demoNamespace, demoNamespace)
	fmt.Printf("  %s why pod -n %s %s<tab>   # while a pod waits: why, and when it is estimated to start\n", o.plugin(), demoNamespace, newKindPrefix)
	fmt.Printf("Logs of the webhook, manager and Helm: %s\n", filepath.Join(o.dir, "quotagate"))
	if !o.keep {
		step("Stopping quotagate and the control plane")
		return nil
	}
	fmt.Printf("Press Ctrl-C to stop the control plane and quotagate.\n")
	<-interrupted.Done()
	step("Stopping quotagate and the control plane")
	return nil
}

// withCause adds the timeout's message to an error that a timeout caused.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w\n%w", cause, err)
	}
	return err
}

// watchBurst starts an informer on the demo namespace's pods and returns a tracker
// and the channel the informer's pods arrive on, in the API server's order.
func watchBurst(ctx context.Context, cs kubernetes.Interface) (*tracker, <-chan *corev1.Pod, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(demoNamespace))
	inf := factory.Core().V1().Pods().Informer()
	events := make(chan *corev1.Pod, 4096)
	send := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			select {
			case events <- pod:
			case <-ctx.Done():
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    send,
		UpdateFunc: func(_, obj any) { send(obj) },
	}); err != nil {
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, nil, errors.New("the pod informer did not sync")
	}
	return newTracker(), events, nil
}

// follow prints pod transitions as they come and a budget line every tick, until
// every pod of the burst has succeeded, one has failed, or ctx ends.
// Once, at the first tick with pods gated, it prints the head of the queue.
func follow(ctx context.Context, c client.Client, cs kubernetes.Interface, tr *tracker, events <-chan *corev1.Pod, jobs int) error {
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	queueShown := false
	for tr.done < jobs {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Jobs done when the demo stopped: %w", tr.done, jobs, ctx.Err())
		case pod := <-events:
			if line := tr.observe(pod, time.Now()); line != "" {
				fmt.Println(line)
			}
			if len(tr.failed) > 0 {
				return fmt.Errorf("pods failed: %v", tr.failed)
			}
		case now := <-ticker.C:
			var b v1alpha1.Budget
			if err := c.Get(ctx, client.ObjectKey{Namespace: demoNamespace, Name: budgetName}, &b); err != nil {
				return fmt.Errorf("reading the budget: %w", err)
			}
			fmt.Println(budgetLine(now, &b, tr.done, jobs))
			if !queueShown && b.Status.GatedPods > 0 {
				if err := printQueueHead(ctx, cs); err != nil {
					return err
				}
				queueShown = true
			}
		}
	}
	return nil
}

// allJobsSucceeded waits for the Job controller to mark every Job Complete.
func allJobsSucceeded(ctx context.Context, c client.Client, jobs int) error {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		var list batchv1.JobList
		if err := c.List(ctx, &list, client.InNamespace(demoNamespace)); err != nil {
			return fmt.Errorf("listing Jobs: %w", err)
		}
		complete := 0
		for _, j := range list.Items {
			for _, cond := range j.Status.Conditions {
				if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
					return fmt.Errorf("job %s failed: %s", j.Name, cond.Message)
				}
				if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
					complete++
				}
			}
		}
		if complete == jobs {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Jobs complete: %w", complete, jobs, ctx.Err())
		case <-ticker.C:
		}
	}
}
