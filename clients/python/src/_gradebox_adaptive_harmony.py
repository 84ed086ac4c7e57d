"""Run at interpreter start by ``gradebox-adaptive-harmony.pth`` (installed next to the package in
site-packages): puts a finder at the END of ``sys.meta_path`` that answers ``import
adaptive_harmony`` with gradebox's StringThread (``gradebox/_adaptive_harmony.py``). Being last, it
is asked only after every other finder (sys.path's included) found nothing, so Adaptive's real
package, wherever it is installed, is never shadowed. Kept tiny and free of imports beyond sys:
every interpreter start of the environment runs it, and gradebox itself loads only on that import."""

import sys

_NAME = "adaptive_harmony"


class AdaptiveHarmonyFinder:
    """Answers ``adaptive_harmony`` (nothing else, no submodule) when no earlier finder did."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != _NAME:
            return None
        from importlib.util import find_spec, spec_from_file_location

        shim = find_spec("gradebox._adaptive_harmony")
        if shim is None or not shim.origin:
            return None
        return spec_from_file_location(_NAME, shim.origin)


if not any(getattr(f, "__name__", "") == AdaptiveHarmonyFinder.__name__ for f in sys.meta_path):
    sys.meta_path.append(AdaptiveHarmonyFinder)
