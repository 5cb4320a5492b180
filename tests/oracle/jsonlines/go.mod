module devshare.test/jsonlines

go 1.26.0

require k8s.io/klog/v2 v2.140.0

require github.com/go-logr/logr v1.4.3 // indirect
