# Without a GPU the kernels run through Triton's interpreter (tests/conftest.py sets TRITON_INTERPRET=1).
import pytest
import torch


@pytest.fixture
def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
