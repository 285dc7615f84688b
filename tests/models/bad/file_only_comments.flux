# just a comment

   # another one
