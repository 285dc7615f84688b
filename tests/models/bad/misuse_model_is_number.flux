model = 3
