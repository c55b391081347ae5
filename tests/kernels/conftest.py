import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # kernels run on the CPU through Triton's interpreter

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture
def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
