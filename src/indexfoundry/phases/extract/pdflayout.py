"""pdfminer.six's layout analysis made deterministic.

pdfminer groups text boxes hierarchically with a heap of ``(flag, distance, id(a), id(b), a, b)``
tuples: when two distances tie, the memory addresses of the boxes decide which pair merges
first, so the reading order of some pages (vertical CJK text in ``kampo.pdf``, for one) changes
from run to run. ``StableLTPage`` runs the same algorithm with creation numbers instead of
``id()``; ``StablePageAggregator`` makes pages of that kind. The algorithm is pdfminer.six's
(``LTLayoutContainer.group_textboxes``, MIT licence), only the tie-break differs.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from typing import Any

from pdfminer.converter import PDFPageAggregator
from pdfminer.layout import (
    LAParams,
    LTComponent,
    LTPage,
    LTTextBox,
    LTTextBoxVertical,
    LTTextGroup,
    LTTextGroupLRTB,
    LTTextGroupTBRL,
)
from pdfminer.utils import Plane, apply_matrix_rect


def _dist(obj1: LTComponent, obj2: LTComponent) -> float:
    """Area of the rectangle around both objects less their own areas (pdfminer's measure)."""
    x0 = min(obj1.x0, obj2.x0)
    y0 = min(obj1.y0, obj2.y0)
    x1 = max(obj1.x1, obj2.x1)
    y1 = max(obj1.y1, obj2.y1)
    return float((x1 - x0) * (y1 - y0) - obj1.width * obj1.height - obj2.width * obj2.height)


class StableLTPage(LTPage):
    """An LTPage whose text box grouping does not depend on memory addresses."""

    def group_textboxes(self, laparams: LAParams, boxes: Sequence[LTTextBox]) -> list[LTTextGroup]:
        plane: Plane[Any] = Plane(self.bbox)
        counter = itertools.count()
        number: dict[int, int] = {}

        def key(obj: Any) -> int:
            if id(obj) not in number:
                number[id(obj)] = next(counter)
            return number[id(obj)]

        for box in boxes:
            key(box)

        def isany(obj1: Any, obj2: Any) -> bool:
            x0 = min(obj1.x0, obj2.x0)
            y0 = min(obj1.y0, obj2.y0)
            x1 = max(obj1.x1, obj2.x1)
            y1 = max(obj1.y1, obj2.y1)
            return any(obj is not obj1 and obj is not obj2 for obj in plane.find((x0, y0, x1, y1)))

        dists: list[tuple[bool, float, int, int, Any, Any]] = []
        for i in range(len(boxes)):
            box1 = boxes[i]
            for j in range(i + 1, len(boxes)):
                box2 = boxes[j]
                dists.append((False, _dist(box1, box2), key(box1), key(box2), box1, box2))
        heapq.heapify(dists)
        plane.extend(boxes)
        done: set[int] = set()
        while dists:
            skip_isany, d, id1, id2, obj1, obj2 = heapq.heappop(dists)
            if id1 in done or id2 in done:
                continue
            if not skip_isany and isany(obj1, obj2):
                heapq.heappush(dists, (True, d, id1, id2, obj1, obj2))
                continue
            group: LTTextGroup
            if isinstance(obj1, LTTextBoxVertical | LTTextGroupTBRL) or isinstance(
                obj2, LTTextBoxVertical | LTTextGroupTBRL
            ):
                group = LTTextGroupTBRL([obj1, obj2])
            else:
                group = LTTextGroupLRTB([obj1, obj2])
            plane.remove(obj1)
            plane.remove(obj2)
            done.update([id1, id2])
            for other in plane:
                heapq.heappush(dists, (False, _dist(group, other), key(group), key(other), group, other))
            plane.add(group)
        return list(plane)


class StablePageAggregator(PDFPageAggregator):
    """PDFPageAggregator producing ``StableLTPage`` pages."""

    def begin_page(self, page: Any, ctm: Any) -> None:
        x0, y0, x1, y1 = apply_matrix_rect(ctm, page.mediabox)
        self.cur_item = StableLTPage(self.pageno, (0, 0, abs(x0 - x1), abs(y0 - y1)))
