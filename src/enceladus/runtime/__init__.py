"""Runtime around the compiler: JIT and launch, argument binding, backends selection."""
