model = Chain(Input(65536, 65536, 65536, 65536), relu)
