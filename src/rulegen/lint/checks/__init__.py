"""The lint checks, one module each; ``rulegen.lint.registry`` lists them."""
