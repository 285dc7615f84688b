model = Chain(Input(3), À¯relu)
