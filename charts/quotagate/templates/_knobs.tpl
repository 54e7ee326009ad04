{{/*
quotagate.pdbSpec takes a list: the root context and a component ("webhook" or "manager").
It renders minAvailable or maxUnavailable of the component's PodDisruptionBudget, and fails
the render when the budget would leave no pod evictable, since a node drain would then
wait forever. Kubernetes rounds a percentage up, for minAvailable and maxUnavailable alike
(the disruption controller's GetScaledValueFromIntOrPercent(..., true)), so it is checked
the same way here. values.schema.json checks what it can without the replicas.
*/}}
{{- define "quotagate.pdbSpec" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $values := index $root.Values $component }}
{{- $pdb := $values.podDisruptionBudget }}
{{- $replicas := int $values.replicas }}
{{- $key := printf "%s.podDisruptionBudget" $component }}
{{- $max := $pdb.maxUnavailable }}
{{- if not (kindIs "invalid" $max) }}
{{- $n := include "quotagate.pdbScaled" (list $max $replicas $key "maxUnavailable") | int }}
{{- if lt $n 1 }}
{{- fail (printf "%s.maxUnavailable (%v) lets no %s pod be evicted, and node drains would hang; set it to at least 1 or 1%%" $key $max $component) }}
{{- end }}
maxUnavailable: {{ $max | toJson }}
{{- else }}
{{- $min := $pdb.minAvailable }}
{{- if kindIs "invalid" $min }}
{{- fail (printf "%s needs minAvailable or maxUnavailable" $key) }}
{{- end }}
{{- $n := include "quotagate.pdbScaled" (list $min $replicas $key "minAvailable") | int }}
{{- if kindIs "string" $min }}
{{- if ge $n $replicas }}
{{- fail (printf "%s.minAvailable (%s) of %s.replicas (%d) rounds up to %d pods, so no %s pod could ever be evicted and node drains would hang; lower the percentage or raise %s.replicas" $key $min $component $replicas $n $component $component) }}
{{- end }}
{{- else if ge $n $replicas }}
{{- fail (printf "%s.minAvailable (%d) must be below %s.replicas (%d), or no %s pod could ever be evicted and node drains would hang; raise %s.replicas or set %s.enabled=false" $key $n $component $replicas $component $component $key) }}
{{- end }}
minAvailable: {{ $min | toJson }}
{{- end }}
{{- end }}

{{/*
quotagate.pdbScaled takes a list: an integer or percentage, the replicas, and the value's
name for errors. It prints the number of pods, a percentage rounded up.
*/}}
{{- define "quotagate.pdbScaled" -}}
{{- $v := index . 0 }}
{{- $replicas := index . 1 }}
{{- if kindIs "string" $v }}
{{- if not (regexMatch "^[0-9]+%$" $v) }}
{{- fail (printf "%s.%s (%q) must be an integer or a percentage such as \"50%%\"" (index . 2) (index . 3) $v) }}
{{- end }}
{{- $p := trimSuffix "%" $v | int }}
{{- div (add (mul $p $replicas) 99) 100 }}
{{- else }}
{{- int $v }}
{{- end }}
{{- end }}

{{/*
quotagate.topologySpreadConstraints takes a list: the root context and a component. A
constraint without labelSelector gets the component's selector labels.
*/}}
{{- define "quotagate.topologySpreadConstraints" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $selector := include "quotagate.componentSelectorLabels" (list $root $component) | fromYaml }}
{{- $out := list }}
{{- range (index $root.Values $component).topologySpreadConstraints }}
{{- $c := deepCopy . }}
{{- if not (hasKey $c "labelSelector") }}
{{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) }}
{{- end }}
{{- $out = append $out $c }}
{{- end }}
{{- with $out }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
quotagate.podLabels takes a list: the root context and a component. It is the labels of the
component's pod template, each key once: the selector labels, then <component>.podLabels,
then the chart's labels and commonLabels (a key set twice keeps the first).
*/}}
{{- define "quotagate.podLabels" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $selector := include "quotagate.componentSelectorLabels" (list $root $component) | fromYaml }}
{{- $all := include "quotagate.componentLabels" (list $root $component) | fromYaml }}
{{- toYaml (merge $selector ((index $root.Values $component).podLabels | default dict) $all) }}
{{- end }}
