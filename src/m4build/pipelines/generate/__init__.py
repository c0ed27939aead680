"""``m4build generate``: one prompt over many rows, through the model layer."""
