"""Learning: actor/critic networks, rollouts in the simulator, PPO and a cross-entropy search, and
TorchScript export.

``run.train`` picks the trainer (``ppo``, ``cem``); both are one loop over ``harness`` (episodes,
rollout workers, validation, warm start, export), configured by ``args.TrainArgs``. Nothing is imported
here, so that reading a run's settings or a manifest does not load the trainers.
"""
