"""The commands that explain the platform to the people who share it, and propose changes from its history.

``plan``, ``onboarding``, ``explain`` and ``recommend-quotas`` (a hyphenated command's module has underscores).

One module per command, each with ``add_parser(commands)`` (the subcommand's arguments, for
:mod:`hyperpod_tenancy.cli`) and ``run(args, *, out, err) -> int`` (the exit status). A module imports only
``argparse`` and the standard library at the top; what a command needs (the policy model, matplotlib, rich, the
Kubernetes client) is imported inside ``run``, so ``hyperpod-tenancy --help`` stays fast and a command whose extra
is missing says so in one line. None of them loads jsii.
"""
