"""How ``schema_v3.sqlite3`` and ``schema_v3_export.json`` were made (kept for the record).

Run with the release at commit 92da3ae (schema 3) importable, e.g.
``git archive 92da3ae cortex_memory | tar -x -C /tmp/v3`` then
``PYTHONPATH=/tmp/v3 python tests/local/data/make_schema_v3.py OUT_FOLDER``.
Documents stored one at a time (that release indexed each at once) and in a
batch, Chinese and English text, a conversation, a learning, tags, a
namespace, a forgotten item, beliefs (consolidated) and a second tenant.
"""

from __future__ import annotations

import json
import os
import sys

from cortex_memory.contract import (
    ConsolidateRequest,
    ForgetTarget,
    LearningKind,
    ListRequest,
    MemoryMeta,
    MetaFilter,
    Namespace,
    Reach,
    Role,
    StoreItem,
    Turn,
)
from cortex_memory.local import LocalEngine


def main(out: str) -> None:
    """Write the file and its export into ``out``."""
    a = Namespace.parse("agent:a")
    path = os.path.join(out, "schema_v3.sqlite3")
    with LocalEngine(path) as engine:
        engine.store_many([
            StoreItem.document(
                "我们下周去公园野餐，团队同意了预算。", MemoryMeta(namespace=a, tags=("zh",))
            ),
            StoreItem.document("The team ships releases on Tuesdays.", MemoryMeta(namespace=a)),
            StoreItem.learning("Deploys use blue-green releases.", LearningKind.FACT, 0.9),
        ])
        for text in ("Parked on level 3, spot B12.", "Budget review moved to Friday."):
            engine.store(StoreItem.document(text, MemoryMeta(workspace="home")))
        engine.store(StoreItem.conversation(
            (Turn(Role.USER, "Where is the lighthouse?"),
             Turn(Role.ASSISTANT, "On the northern cape.")),
        ))
        gone = engine.store(StoreItem.document("This note will be forgotten."))
        engine.forget(ForgetTarget.ids([gone.id]))
        engine.consolidate(ConsolidateRequest(Reach.subtree(Namespace.root())))
        page = engine.export(ListRequest(MetaFilter(reach=Reach.subtree(Namespace.root())), 100))
        with open(os.path.join(out, "schema_v3_export.json"), "w", encoding="utf-8") as f:
            items = [entry.item.to_json() for entry in page.items]
            json.dump(items, f, ensure_ascii=False, indent=1)
    with LocalEngine(path, tenant="other") as other:
        other.store(StoreItem.document("另一个租户的笔记：发布在周二。"))


if __name__ == "__main__":
    main(sys.argv[1])
