"""Passes over the tile IR: axis analysis, layout assignment, vectorization."""
