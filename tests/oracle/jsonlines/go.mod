module devshare.test/jsonlines

go 1.26.0
