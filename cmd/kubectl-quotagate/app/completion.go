package app

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quotagate/quotagate/api/v1alpha1"
)

// Shell completion. kubectl runs kubectl_complete-quotagate, which runs the plugin's
// "__complete" (cobra's): cobra parses the flags typed so far (--kubeconfig, --context,
// -n, --as) and calls these functions, which read the API with the user's own
// credentials. What the user may not list completes to nothing, as kubectl's own
// completion does, except namespaces: a user who may not list them gets the current
// one. Completions are filtered by the prefix typed, as kubectl filters its own.

// completionScope is the client and namespace a completion of the command's one
// argument reads with; ok is false when that argument is already given or the
// kubeconfig cannot be read (nothing to complete, as kubectl does).
func (e *env) completionScope(args []string) (c client.WithWatch, ns string, ok bool) {
	if len(args) > 0 {
		return nil, "", false
	}
	c, err := e.client()
	if err != nil {
		return nil, "", false
	}
	if ns, err = e.namespace(); err != nil {
		return nil, "", false
	}
	return c, ns, true
}

// completeBudgets completes a BUDGET argument: the Budgets of the namespace by name,
// "clusterbudget/NAME" for each ClusterBudget, and after "NAMESPACE/" the Budgets of
// that namespace.
func (e *env) completeBudgets(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	c, ns, ok := e.completionScope(args)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	var out []string
	prefix, _, qualified := strings.Cut(toComplete, "/")
	listBudgets := func(ns, qualifier string) {
		var budgets v1alpha1.BudgetList
		if c.List(ctx, &budgets, client.InNamespace(ns)) == nil {
			for _, b := range budgets.Items {
				out = append(out, qualifier+b.Name)
			}
		}
	}
	listClusterBudgets := func(qualifier string) {
		var cbs v1alpha1.ClusterBudgetList
		if c.List(ctx, &cbs) == nil {
			for _, b := range cbs.Items {
				out = append(out, qualifier+b.Name)
			}
		}
	}
	switch {
	case !qualified:
		listBudgets(ns, "")
		listClusterBudgets("clusterbudget/")
	case isClusterBudgetPrefix(prefix):
		listClusterBudgets(prefix + "/")
	case isBudgetPrefix(prefix):
		listBudgets(ns, prefix+"/")
	default:
		listBudgets(prefix, prefix+"/")
	}
	return matching(out, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completePods completes a POD argument: the pods of the namespace, and after
// "NAMESPACE/" the pods of that namespace.
func (e *env) completePods(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	c, ns, ok := e.completionScope(args)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	qualifier := ""
	if prefix, _, ok := strings.Cut(toComplete, "/"); ok {
		qualifier = prefix + "/"
		if !strings.EqualFold(prefix, "pod") && !strings.EqualFold(prefix, "pods") {
			ns = prefix
		}
	}
	var pods corev1.PodList
	if err := c.List(cmd.Context(), &pods, client.InNamespace(ns)); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	out := make([]string, 0, len(pods.Items))
	for _, p := range pods.Items {
		out = append(out, qualifier+p.Name)
	}
	return matching(out, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeNamespaces completes -n: the namespaces the user may list, or, when they may
// not list namespaces, the current one (the kubeconfig context's).
func (e *env) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	c, err := e.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var list corev1.NamespaceList
	var out []string
	switch err := c.List(cmd.Context(), &list); {
	case err == nil:
		for _, n := range list.Items {
			out = append(out, n.Name)
		}
	case apierrors.IsForbidden(err):
		if ns, err := e.namespace(); err == nil {
			out = append(out, ns)
		}
	}
	return matching(out, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// registerKubeconfigCompletions completes the kubeconfig flags kubectl completes: -n
// from the API, --context, --cluster and --user from the kubeconfig.
func registerKubeconfigCompletions(cmd *cobra.Command, e *env, flags *genericclioptions.ConfigFlags) {
	fromKubeconfig := func(names func(*clientcmdapi.Config) []string) cobra.CompletionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cfg, err := flags.ToRawKubeConfigLoader().RawConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return matching(names(&cfg), toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	completions := map[string]cobra.CompletionFunc{
		"namespace": e.completeNamespaces,
		"context":   fromKubeconfig(func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.Contexts)) }),
		"cluster":   fromKubeconfig(func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.Clusters)) }),
		"user":      fromKubeconfig(func(c *clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.AuthInfos)) }),
	}
	for name, f := range completions {
		if cmd.PersistentFlags().Lookup(name) != nil {
			_ = cmd.RegisterFlagCompletionFunc(name, f)
		}
	}
}

// completeFixed completes a flag from a fixed list.
func completeFixed(values ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return matching(values, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// matching returns the non-empty values that start with prefix, sorted, once each.
func matching(values []string, prefix string) []string {
	out := make([]string, 0, len(values))
	for _, v := range values {
		if v != "" && strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
