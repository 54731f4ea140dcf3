"""The maths behind the teaching pages, one module per topic, as functions returning numpy arrays
and small frozen dataclasses (the app only draws them):

- ``positional``: the sinusoid table, frequencies, the relative-position rotation, the worked
  example, and what a loaded model adds to its embeddings;
- ``attention``: the attention playground (β, hard attention, 1/√d saturation, score functions,
  the key-value store, Q/K/V projections);
- ``masks``: look-ahead, padding and combined masks, the masked softmax;
- ``norms``: LayerNorm vs BatchNorm, the FFN as a 1×1 convolution;
- ``schedule``: the Noam learning-rate curve and label smoothing;
- ``parameters``: parameter counts per block against the formulas;
- ``self_attention``: permutation equivariance, the paper's Table 1, the cost of attention;
- ``walkthrough``: one sentence through the translation model, stage by stage;
- ``sampling``: one decoder step's distribution under temperature, top-k and top-p;
- ``recipe``: Adam's settings, warm-up schedules side by side, label smoothing's confidence penalty;
- ``coreference``: which heads of a real encoder link one word to another, and their measured ranks.
"""
