"""The decision layer: the analysis of a frame of results (speedups, the recommendation as data), what a run really
costs (energy, owning against renting, payback, the ladder) and the decision in words."""
