"""The one build step pyproject.toml cannot say: gradebox-adaptive-harmony.pth goes to the root of
the wheel, so that pip installs it into site-packages itself, where the interpreter runs its
``import`` line at start (data_files would put it under the environment's prefix instead)."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "gradebox-adaptive-harmony.pth"


class BuildPyWithPth(build_py):
    def run(self):
        super().run()
        self.copy_file(os.path.join("src", PTH), os.path.join(self.build_lib, PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


setup(cmdclass={"build_py": BuildPyWithPth})
