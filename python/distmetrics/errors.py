"""Exceptions a registration raises to tell distmetrics something (no torch import here)."""


class Unsupported(Exception):
    """Raised by a factory or an adapter: this metric cannot take this variant (a parameter its
    class has no counterpart for, a weight it cannot take...). The variant is skipped with the
    message as its reason; it is not a failure of the metric. Keep the class name: the C++ host
    reads an exception named ``Unsupported`` as a skip."""


class PeerSetupError(Exception):
    """A peer mapping that cannot be used (its library missing from the interpreter, a class the
    library does not have, a parameter that cannot be mapped): the message names the mapping's
    file, line and field."""


class NotApplicable(Exception):
    """Raised by the host for a step that does not apply to a metric by a convention it declares
    (a class that rejects a batch of no rows is not fed one): the property that step would judge
    is "not applicable" with the message as its reason, never a pass. Keep the class name: the
    C++ host reads an exception named ``NotApplicable`` so."""
