"""What each interruption cause does, per game, as data.

Causes follow the GLI-19 interrupted-game causes and the seeds. Each rule set
carries an `ErrorPolicy`: for every cause, one action:

- `complete`: not a void; the player's hands are completed automatically
  (live blackjack's no-action rule; pending follow offers count as declined).
- `pause`: the round stops until a supervisor resumes it or voids it.
- `void`: the round is cancelled and every amount of every bet is refunded.
"""
from __future__ import annotations

from dataclasses import dataclass

from domain.errors import refuse, require
from domain.refusals import RefusalCode

CAUSES = (
    "player_connection_lost",
    "player_no_action",
    "host_interruption",
    "system_error",
    "human_error",
    "game_disabled",
    "unresolved_pause",
    "other",
)
ACTIONS = ("complete", "pause", "void")
# Causes on the player's side (seed 000 error handling 1): the interruption concerns one
# player, so the feed must name them (refused `player_required` otherwise) and the round
# records who it was (Round.Interrupted), whatever the policy's action.
PLAYER_CAUSES = ("player_connection_lost", "player_no_action")


def check_cause(cause: object) -> str:
    if cause not in CAUSES:
        raise refuse(RefusalCode.BAD_CAUSE, cause=cause, causes=', '.join(CAUSES))
    return cause  # `in CAUSES` narrowed it to str


def is_player_side(cause: str) -> bool:
    return cause in PLAYER_CAUSES


@dataclass(frozen=True, slots=True)
class ErrorPolicy:
    actions: tuple[tuple[str, str], ...]  # (cause, action) for every cause
    replace_shoe_on_void: bool  # blackjack live-8d: the whole shoe is replaced after a void
    source: str  # where the rule comes from, for explanations

    def __post_init__(self) -> None:
        causes = [c for c, _ in self.actions]
        require(sorted(causes) == sorted(CAUSES), f"policy must cover every cause once: {causes}")
        require(all(a in ACTIONS for _, a in self.actions), f"unknown action in {self.actions}")
        # "complete" plays one player's hands: only a cause that names a player can ask for it
        require(all(c in PLAYER_CAUSES for c, a in self.actions if a == "complete"),
                f"only player-side causes ({', '.join(PLAYER_CAUSES)}) may complete: {self.actions}")

    def action_for(self, cause: str) -> str:
        check_cause(cause)
        return dict(self.actions)[cause]


def policy(source: str, replace_shoe_on_void: bool = False, **actions: str) -> ErrorPolicy:
    """Build a policy; `default=` covers every cause not named."""
    default = actions.pop("default")
    return ErrorPolicy(
        actions=tuple((c, actions.get(c, default)) for c in CAUSES),
        replace_shoe_on_void=replace_shoe_on_void,
        source=source,
    )
