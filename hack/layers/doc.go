// Command layers checks that the admission core's packages import only downwards: it
// reads the layer order that pkg/quota/doc.go declares (its "Layers" section) and the
// imports `go list` reports for pkg/quota/..., and fails on an import that points to a
// package of the same or a higher layer, on a package under pkg/quota that the order
// does not declare, and on a declared package that does not exist. A package of helpers
// for tests (named after the package above it with "test" appended, as
// net/http/httptest) is in no layer, and no package may import it.
//
// `make verify` runs it as `go run ./hack/layers`. The compiler already refuses import
// cycles; this keeps the order that a reader of doc.go is told, so that a leaf (amounts,
// the heap) never grows a dependency on the parts that decide.
package main
