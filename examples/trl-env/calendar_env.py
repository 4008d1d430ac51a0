"""A meeting calendar for TRL's ``GRPOTrainer(environment_factory=Calendar)``: TRL creates one
per rollout, calls ``reset`` with the dataset row, offers the public methods (``book``,
``cancel``) to the model as tools and runs the calls it makes. ``referee_state`` is the final
state Referee grades (``{{sample.state}}``); a property, so it is not offered as a tool."""

SLOTS = ("09:00", "10:00", "11:00")


class Slots:
    """The tools. Their docstrings are the tool schemas TRL renders into the prompt."""

    def __init__(self):
        self._bookings: list[dict] = []

    def reset(self, **row) -> None:
        self._bookings = [dict(b) for b in row.get("initial_bookings") or []]

    def book(self, day: str, time: str) -> str:
        """Book a meeting.

        Args:
            day: The day of the week, e.g. "tuesday".
            time: The time of day, HH:MM.
        """
        if time not in SLOTS:
            raise ValueError(f"no slot at {time}")  # TRL writes the error as the tool result
        self._bookings.append({"day": day, "time": time})
        return f"booked {day} {time}"

    def cancel(self, day: str, time: str) -> str:
        """Cancel a meeting.

        Args:
            day: The day of the week.
            time: The time of day, HH:MM.
        """
        self._bookings.remove({"day": day, "time": time})
        return f"cancelled {day} {time}"


class Calendar(Slots):
    @property
    def referee_state(self) -> dict:
        return {"bookings": [dict(b) for b in self._bookings]}
