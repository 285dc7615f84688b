model = chain(Input(4), relu)
