model = Chain()
