"""How ``schema_v2.sqlite3`` and ``schema_v2_export.json`` were made (kept for the record).

Run with the release at commit 88f5cda (schema 2) importable, e.g.
``git archive 88f5cda cortex_memory | tar -x -C /tmp/v2`` then
``PYTHONPATH=/tmp/v2 python tests/local/data/make_schema_v2.py OUT_FOLDER``.
Chinese, Japanese and Korean documents, a learning, tags, a namespace, a
forgotten item, beliefs (consolidated) and a second tenant.
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
    StoreItem,
)
from cortex_memory.local import LocalEngine


def main(out: str) -> None:
    """Write the file and its export into ``out``."""
    a = Namespace.parse("agent:a")
    path = os.path.join(out, "schema_v2.sqlite3")
    with LocalEngine(path) as engine:
        engine.store_many([
            StoreItem.document(
                "我们下周去公园野餐，团队同意了预算。\n会议定在周三下午三点。",
                MemoryMeta(namespace=a, tags=("zh",)),
            ),
            StoreItem.document(
                "データベースのバックアップは毎晩三時に実行されます。",
                MemoryMeta(namespace=a, tags=("ja",)),
            ),
            StoreItem.document(
                "서울에서 회의가 있습니다. 예산은 다음 주에 확정됩니다.",
                MemoryMeta(namespace=a, tags=("ko",)),
            ),
            StoreItem.document("The team ships releases on Tuesdays.", MemoryMeta(namespace=a)),
            StoreItem.learning(
                "部署使用蓝绿发布。Deploys use blue-green releases.", LearningKind.FACT, 0.9
            ),
            StoreItem.document("Temporary note to forget 临时笔记。"),
        ])
        gone = engine.store(StoreItem.document("这条笔记会被删除。"))
        engine.forget(ForgetTarget.ids([gone.id]))
        engine.consolidate(ConsolidateRequest(Reach.subtree(Namespace.root())))
        page = engine.export(ListRequest(MetaFilter(reach=Reach.subtree(Namespace.root())), 100))
        with open(os.path.join(out, "schema_v2_export.json"), "w", encoding="utf-8") as f:
            items = [entry.item.to_json() for entry in page.items]
            json.dump(items, f, ensure_ascii=False, indent=1)
    with LocalEngine(path, tenant="other") as other:
        other.store(StoreItem.document("另一个租户的笔记：发布在周二。"))


if __name__ == "__main__":
    main(sys.argv[1])
