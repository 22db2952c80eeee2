module flashstock/go/flashstock

go 1.19
