"""What runs on a GPU node: device detection, timing, the sandbox and the job kinds."""
