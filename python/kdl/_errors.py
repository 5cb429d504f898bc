"""The errors kdl.load raises. Each says what failed in the words of the tool that failed."""

import shlex


class SpecError(ValueError):
    """The spec has errors: ``diagnostics`` is kdlc's text, each error located (file:line:col) with
    its source line and a caret, exactly as ``kdlc check`` prints it."""

    def __init__(self, spec, diagnostics):
        self.spec = spec
        self.diagnostics = diagnostics
        super().__init__(diagnostics.rstrip("\n") or f"kdlc refused {spec} without a message")


class BuildError(RuntimeError):
    """A command of the build failed: ``command`` (a list of words), ``returncode`` and ``output``
    (what it printed, the compiler's messages included)."""

    def __init__(self, what, command, returncode, output, hint=None):
        self.command = list(command)
        self.returncode = returncode
        self.output = output
        self.hint = hint
        status = f"killed by signal {-returncode}" if returncode is not None and returncode < 0 else f"exit {returncode}"
        text = f"{what} ({status})\n  command: {shlex.join(self.command)}\n"
        if output.strip():
            text += output.rstrip("\n") + "\n"
        if hint:
            text += f"note: {hint}\n"
        super().__init__(text.rstrip("\n"))


class KdlcNotFound(RuntimeError):
    """No usable kdlc: the message says where kdl looked and how to point it to one."""


class NamespaceConflict(RuntimeError):
    """The spec's namespace is already loaded in this process from another build. PyTorch cannot
    unload or replace the ops of a namespace: restart the process, or load with another namespace=."""
