"""The local stack in one description (stack.py): what `make up` runs through the Procfile,
what the tests start on free ports (services.py), and what the bench starts."""
