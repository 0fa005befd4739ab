"""The policy language: its typed models, and how policy files are read into them."""
