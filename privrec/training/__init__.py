"""Tasks (data -> tensors), the shared trainer, checkpoints."""
