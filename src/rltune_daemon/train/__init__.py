"""Learning: actor/critic networks, rollouts in the simulator, PPO, and TorchScript export."""
