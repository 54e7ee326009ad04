package localinstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/quotagate/quotagate/test/supervise"
)

// hookPollInterval is how often Uninstall looks for hook pods to run.
const hookPollInterval = 200 * time.Millisecond

func (i *Installation) hookLogPath() string { return filepath.Join(i.opts.Dir, "release-hook.log") }

// Uninstall is `helm uninstall`. While Helm waits for the chart's pre-delete hook Job,
// Uninstall plays the kubelet for the Job's pods (see the package comment): it runs
// each pod's command (`manager release --all --webhook-configuration ...`) as a process
// under the pod's ServiceAccount and reports its exit in the pod's status, so the Job
// succeeds or fails as it would in a cluster and Helm proceeds, or fails, accordingly.
// Then it stops the webhook and manager processes, whose Deployments Helm has deleted.
func (i *Installation) Uninstall(ctx context.Context) error {
	hookCtx, cancel := context.WithCancel(ctx)
	hookErr := make(chan error, 1)
	go func() { hookErr <- i.runHookPods(hookCtx) }()
	err := i.helmUninstall()
	cancel()
	if herr := <-hookErr; herr != nil {
		err = errors.Join(err, herr)
	}
	return errors.Join(err, i.Stop())
}

// runHookPods runs every Helm hook pod of the release namespace once kwok reports it
// Running (it is bound to a node and "started"), until ctx ends. It returns the errors
// of hook commands that failed.
func (i *Installation) runHookPods(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx)
	done := map[types.UID]bool{}
	var errs []error
	ticker := time.NewTicker(hookPollInterval)
	defer ticker.Stop()
	for {
		pods, err := i.hookPods(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error(err, "Listing hook pods")
		}
		for _, pod := range pods {
			if done[pod.UID] || pod.Status.Phase != corev1.PodRunning {
				continue
			}
			done[pod.UID] = true
			log.V(1).Info("Running hook pod", "pod", klog.KObj(&pod))
			if err := i.runHookPod(ctx, &pod); err != nil {
				errs = append(errs, err)
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(errs...)
		case <-ticker.C:
		}
	}
}

// hookPods lists the pods of the release namespace's Jobs that are Helm hooks.
func (i *Installation) hookPods(ctx context.Context) ([]corev1.Pod, error) {
	jobs, err := i.client.BatchV1().Jobs(i.opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Jobs: %w", err)
	}
	var pods []corev1.Pod
	for _, job := range jobs.Items {
		if _, ok := job.Annotations[hookAnnotation]; !ok {
			continue
		}
		list, err := i.client.CoreV1().Pods(i.opts.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "batch.kubernetes.io/job-name=" + job.Name,
		})
		if err != nil {
			return nil, fmt.Errorf("listing the pods of Job %s: %w", job.Name, err)
		}
		pods = append(pods, list.Items...)
	}
	return pods, nil
}

// runHookPod runs the pod's first container's command here and writes the outcome
// into the pod's status.
func (i *Installation) runHookPod(ctx context.Context, pod *corev1.Pod) error {
	ctr := pod.Spec.Containers[0]
	if len(ctr.Command) == 0 {
		return fmt.Errorf("hook pod %s: container %s has no command", pod.Name, ctr.Name)
	}
	binary := filepath.Join(i.opts.BinDir, path.Base(ctr.Command[0]))
	started := time.Now()
	runErr := i.runHookCommand(ctx, pod, binary, append(ctr.Command[1:], ctr.Args...))
	exitCode := 0
	if runErr != nil {
		exitCode = 1
		var ee *exec.ExitError
		if errors.As(runErr, &ee) && ee.ExitCode() > 0 {
			exitCode = ee.ExitCode()
		}
	}
	if err := i.reportHookExit(ctx, pod, started, exitCode); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		return &ExitError{Process: "release-hook", Err: runErr, LogPath: i.hookLogPath(), LogTail: supervise.TailFile(i.hookLogPath(), supervise.LogTailLines)}
	}
	return nil
}

func (i *Installation) runHookCommand(ctx context.Context, pod *corev1.Pod, binary string, args []string) error {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	kconf, err := i.serviceAccountKubeconfig(ctx, "release-hook", sa)
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(i.hookLogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening hook log: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	fmt.Fprintf(logFile, "--- %s: pod %s/%s as %s: %s %s\n", time.Now().Format(time.RFC3339),
		pod.Namespace, pod.Name, sa, binary, strings.Join(args, " "))
	deadline := i.opts.Timeout
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		deadline = time.Duration(*d) * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	cmd := exec.CommandContext(cctx, binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kconf, "POD_NAMESPACE="+pod.Namespace)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	return cmd.Run()
}

// reportHookExit sets the pod's phase and container states as a kubelet does when the
// container exits.
func (i *Installation) reportHookExit(ctx context.Context, pod *corev1.Pod, started time.Time, exitCode int) error {
	phase, reason := corev1.PodSucceeded, "Completed"
	if exitCode != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	var statuses []corev1.ContainerStatus
	for n, c := range pod.Spec.Containers {
		code := int32(0)
		if n == 0 {
			code = int32(exitCode)
		}
		statuses = append(statuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, StartedAt: metav1.NewTime(started), FinishedAt: now,
			}},
		})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"phase": phase, "containerStatuses": statuses}})
	if err != nil {
		return err
	}
	if _, err := i.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("reporting the exit of hook pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
