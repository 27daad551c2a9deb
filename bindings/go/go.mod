module tidesdb/bindings/go

go 1.23
