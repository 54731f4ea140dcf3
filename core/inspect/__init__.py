"""From a model to pure data: explain, the Explanation record, analysis, decoding and embeddings."""
