"""The render layer: text tables, Markdown and charts (Vega-Lite specifications) of what the decision layer decided."""
