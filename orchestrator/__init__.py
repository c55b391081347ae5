"""kernelfleet's driver: configuration, planning, Ray scheduling, the fleet and the store."""
