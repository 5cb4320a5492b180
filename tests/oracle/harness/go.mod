module devshare.test/hami-oracle

go 1.25.5

// HAMi itself is added by build.sh on the first build, pinned by commit
// (HAMi's module path has no /v2 suffix, so its v2.x tags resolve to a
// pseudo-version): go get github.com/Project-HAMi/HAMi@$HAMI_COMMIT, plus
// HAMi's nested modules at the same commit, because HAMi's own go.mod
// replaces them by local paths and replace directives of a dependency do
// not apply here. Commit the go.mod and go.sum that build writes.
require (
	k8s.io/api v0.35.3
	k8s.io/apimachinery v0.35.3
	k8s.io/client-go v0.35.3
	k8s.io/kube-scheduler v0.28.3
)
