"""From a model to pure data: explain, the Explanation record, analysis and decoding."""
