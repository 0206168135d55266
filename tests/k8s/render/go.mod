module irqwise/tests/k8s/render

go 1.19
