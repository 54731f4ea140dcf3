"""Pure chart builders (data in, Altair chart out): attention views, teaching figures, training curves."""
