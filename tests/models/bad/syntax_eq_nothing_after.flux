model =
