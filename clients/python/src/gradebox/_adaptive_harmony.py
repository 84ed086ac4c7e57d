"""``adaptive_harmony`` for a script written against Adaptive's SDK, when Adaptive's own package is
not installed: Adaptive's graders page starts with ``from adaptive_harmony import StringThread``.

Never imported under this name by a user: ``_gradebox_adaptive_harmony`` (run at interpreter start
by the ``gradebox-adaptive-harmony.pth`` file the package installs) executes this file as the
module ``adaptive_harmony``, and only when no other finder on ``sys.meta_path`` answers for that
name, so a real ``adaptive_harmony`` always wins. The sandbox has its own, the same class."""

from gradebox.thread import StringThread

__all__ = ["StringThread"]
