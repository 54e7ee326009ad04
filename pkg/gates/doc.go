// Package gates holds the pure functions that read, add and remove a pod's
// scheduling gate, and that build the JSON patches (RFC 6902) which do the same
// on the API server.
//
// Nothing here talks to a cluster: the webhook uses AddOps to answer an
// admission request, and the manager sends UngatePatch as a
// client.RawPatch(types.JSONPatchType, ...). The remove ops always `test` the
// gate's name at the index they remove, so a patch built from a stale copy of
// the pod fails instead of removing someone else's gate. A pod admitted on a
// flavor gets UngatePatchOnFlavor, which also adds the flavor's node labels and
// tolerations in the same patch.
package gates
