"""The commands layer: one module per command, each a parser and a few lines over a documented library function
(as asv's commands are). :mod:`advisor.cli` builds the parser from :data:`COMMANDS` and dispatches."""

from advisor.commands import (
    add,
    calibration,
    catalog,
    compare,
    crossval,
    engines,
    estimate,
    examples,
    listing,
    measure,
    models,
    recommend,
    schema,
    serve,
    stacks,
    submit,
    validate,
)

# In the order the help lists them.
COMMANDS = (
    listing,
    validate,
    compare,
    recommend,
    catalog,
    estimate,
    crossval,
    calibration,
    models,
    stacks,
    engines,
    examples,
    add,
    schema,
    measure,
    submit,
    serve,
)
