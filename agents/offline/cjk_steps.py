"""Whether a Japanese or a Chinese sentence is a step: it tells the reader what to do.

Japanese steps end in a polite verb with no subject (「設定を開きます」), a request (「食べてみて」)
or a to-do (「予約しておくこと」); in a numbered list the plain form is one too (「枝を取り除く」).
Chinese leaves a statement's subject out as readily as a step's (「新增 --units 参数」, 「从 NOAA
获取预测」): rjieba's tags (jieba's dictionary) say which word is a verb, and only a numbered
list, a command as the object, or 「就」/「请」 before the verb make it a step.
"""

from __future__ import annotations

import re

from aclarai.agents.offline.features import word_set

_CHINESE_IMPERATIVES = tuple(
    word_set(
        """
        点击 单击 双击 右键 打开 启用 禁用 停用 选择 选中 输入 按下 按 转到 前往 拖动 拖放
        安装 卸载 添加 删除 创建 新建 设置 使用 复制 粘贴 保存 搜索 查看 请 勾选 取消勾选 切换
        关闭 进入 返回 访问 点按 轻点 轻触 长按
        """
    )
)

_CHINESE_ACTION_VERBS = word_set(
    """
    检查 核实 核对 确认 带上 穿上 戴上 复习 倒掉 倒入 关掉 关上 离心 稀释 孵育 解冻 播种 联系
    致电 下载 登录 填写 切碎 擦干 晾干 按住 轻拍 保持 确保 替换 放入 放进 摇匀 混匀 搅拌 冲洗
    预订
    """
)
"""Verbs that open a step wherever they stand first, told apart from a noun that starts the same
way by jieba's words (「登录页面」 is no 「登录」): check, confirm, bring, wear, revise, pour,
spin, dilute, incubate, thaw, sow, contact, download, fill in, hold, keep, make sure, mix, book."""

_CHINESE_MODAL_STEP = re.compile(
    r"^(?:请(?![求假教])|记得|务必|一定要|尽量|最好(?![的成看吃用听玩]))"
)
"""A request, a reminder or advice that opens a clause: 「请新建…」, 「记得提前订位」, 「尽量坐
地铁」."""

_CHINESE_ASPECT = frozenset({"了", "过", "着", "已经", "曾", "曾经", "已"})
"""The words with which a statement says what happened: 「去年完成了…」; as words, so that 「通过」
and 「沿着」 do not count."""

_CHINESE_AMOUNT_TAGS = frozenset({"m", "q"})
"""Numbers and measure words: 「17,900 g 离心」."""

_CHINESE_MODAL = frozenset({"会", "能", "能够", "可以", "可能", "不了"})
"""The words with which a statement says what can or will happen: 「在桌面浏览器中可以正常使用」;
as words, so that 「会议」 and 「性能」 do not count."""

_CHINESE_STEP_ADVERB = re.compile(
    r"^(?:(?:请|先|再|然后|接着|最后|首先|立即|立刻|马上|只|就|务必|一定|逐个|逐条|逐一|慢慢|轻轻|"
    r"分层|分批|仔细|小心)\s*)+"
)

_CHINESE_COVERBS = tuple(word_set("在 用 将 把 对 沿 以 到 往 向 按 给 从 通过"))

_CHINESE_NOT_COVERBS = tuple(
    word_set(
        """
        用户 用途 用法 用于 在线 在于 将来 将军 将近 对象 对方 对于 对话 以及 以后 以前 以上
        以下 以来 以外 到达 到底 到期 从而 从事 从来 按钮 把握 向量 给予 通过率
        """
    )
)

_CHINESE_PROHIBITION = re.compile(
    r"不要(?![求紧])|切勿|请勿|千万别|千万不要|(?<![申邀聘])请参[阅见]|详见"
    r"|(?<![特区分级类告识个性差派辨鉴判有])别(?=[忘让把在用碰动订去买吃喝太再急担错给跟说做拿放开关等停跑])"
)

_CHINESE_STATIVE = word_set(
    """
    是 有 没有 需要 会 能 能够 可 可以 应 应该 要 属于 位于 包括 包含 成为 说明 表明 意味着
    带有 含有 显示 支持 适用 适合 取决于 依赖 提供 允许 具有 拥有 存在 出现 发生 开始 继续 就是 为
    停止 保持 变得 叫 称为 来自 用于 等于 相当于 约为 达到 超过 占 只有 还有 共有 已 已经 曾 曾经
    """
)
"""Verbs that state rather than tell: a Chinese statement may leave out its subject too
(「支持 Windows。」, 「说明里面积了空气。」)."""

_CHINESE_TIME_TAGS = frozenset({"t", "tg", "m", "mq", "q", "f"})

_CHINESE_OPENERS = (
    "如果",
    "若",
    "当",
    "一旦",
    "待",
    "为了",
    "要是",
    "假如",
    "如需",
    "如要",
    "万一",
)

_JAPANESE_STEP = re.compile(
    r"(?:ます|ください|(?<!という)(?<=[うくぐすつぬぶむるい])こと|て|てね)[。．]?$"
)
"""A polite step (「バルブを閉めます」), a request (「食べてみて」), or a to-do in the form of a
noun of doing (「予約しておくこと」, 「入れないこと」)."""

_JAPANESE_ADVICE = re.compile(
    r"(?:(?<![だであ])[おことのほもよろごぞどぼぽ]う|ましょう|(?:の|ほう)が(?:おすすめ|いい|よい)|"
    r"(?:た|る)ほうがいい)[。．!！]?$"
)
"""A suggestion or advice: 「手すりにつかまろう」, 「外で待ちましょう」, 「朝早く行くのがおすすめ」
(「だろう」, 「であろう」 and 「でしょう」 guess; 「降りそう」 looks likely)."""

_JAPANESE_PLAIN_STEP = re.compile(r"[うくぐすつぬぶむる][。．]?$")
"""A numbered step may be in the plain form: 「枝を取り除く」, 「収穫する」."""

_JAPANESE_STATEMENT_ENDINGS = (
    "できます",
    "あります",
    "ています",
    "でいます",
    "がいます",
    "れます",
    "なります",
    "えます",
    "けます",
    "せます",
)
"""Polite endings that state: can, there is, is doing, is done, becomes (「表示されます」,
「使えます」)."""

_NUMBERED_STATEMENT_ENDINGS = (
    "できます",
    "あります",
    "ています",
    "でいます",
    "されます",
    "られます",
)
"""In a numbered list a polite ending says "do": 「味を調えます」, 「バヌトンに入れます」."""

_CAUSATIVE_STEP = re.compile(r"(?:させ|わせ|ませ)ます[。．]?$")

_JAPANESE_SUBORDINATE = re.compile(
    r"、|たら|れば|まで|ので|ように|ながら|ても|ことを|(?<=[るいただ])か"
)
"""Where a Japanese subordinate clause ends: its subject (「玉ねぎがしんなりするまで」) is not
the main clause's. Only a numbered step is read so: 「テストが終わるまでに40秒かかります」
states."""

_JAPANESE_COMMA = re.compile("、|ことを")

_JAPANESE_TOPIC = re.compile(
    r"[^、。]{1,40}?(?<![にでと])(?<!場合)(?<!時)(?<!とき)(?<=[^\u3040-\u309f]|[れの])は"
)
"""A topic that opens the sentence is its subject, whatever clauses follow:
「roundは、…を丸めます」. It follows a noun (「これは」, 「設定は」); after another kana は
is a word's own: 「シードがはじけはじめたら」."""

_TRAILING_NOTE = re.compile(r"[（(][^）)]*[）)]$")

_JAPANESE_LEAD_IN = re.compile(r"(?:次|以下|下記)の(?:とおり|通り|\d+[つ件項点])")
"""「次のとおりである。」, 「次の4つの国の首都がある。」: a sentence that introduces a list."""

_JAPANESE_SUBJECT = re.compile("(?<![にでと])[はが]|(?<![とれ])も")


def is_chinese_step(sentence: str, *, numbered: bool) -> bool:
    """A Chinese step has no subject: its first clause opens with a verb of doing (「找到放气阀」),
    after a time if any (「周五前复习第 4 章」), or with a coverb that leads to one
    (「用湿布擦净瓷砖」). After an opening clause (「如果…，」, 「15 分钟后，」) the next clause is
    read the same way. A statement leaves its subject out as readily (「新增 --units 参数」,
    「从 NOAA 获取预测」), so outside a numbered list only a help page's verb (「点击设置」), a
    command as the object (「运行 `tidewatch init`」) or 「就」 or 「请」 before the verb makes a
    step. A 「不要」 or 「切勿」 tells the reader what not to do."""
    if _CHINESE_PROHIBITION.search(sentence):
        return True
    clauses = [c.strip() for c in re.split(r"[，；,;]", sentence) if c.strip()]
    if not clauses:
        return False
    if any(_CHINESE_MODAL_STEP.match(c) for c in clauses) or (
        _opens_with_ba(clauses[0]) and not _says(clauses[0], _CHINESE_MODAL)
    ):
        return True  # 「要嵌入文件，请…」, 「把密码输入两次」: a request, or what to do with it
    for i, clause in enumerate(clauses):
        bare = _CHINESE_STEP_ADVERB.sub("", clause)
        if bare.startswith(_CHINESE_IMPERATIVES) or (i > 0 and _opens_with_ba(clause)):
            return True  # 「万一警报响了，把密码输入两次」: after an opening clause
        urged = i > 0 and clause.startswith(("就", "请"))
        tagged = clause_opening(clause)
        if (
            tagged
            and (tagged[0][0] in _CHINESE_ACTION_VERBS or _reduplicated(*tagged[0]))
            and not _is_chinese_opener(clause)  # 「确认收货后，系统会…」
            and ("是否" in clause or not any(w in _CHINESE_STATIVE for w, _ in tagged[1:]))
        ):
            return True  # 「离心 10 分钟」, 「尝尝抹茶软冰淇淋」 (「确保稳定是目标」 states)
        verb_first = bool(tagged) and (
            _is_chinese_verb(*tagged[0])
            or (numbered and (tagged[0][1] == "vn" or _directional(*tagged[0])))
        )
        if verb_first and not _is_chinese_opener(clause) and not _says(clause, _CHINESE_ASPECT):
            # 「起火的船」: a verb before 的 describes the noun that follows it.
            following = tagged[1][0] if len(tagged) > 1 else ""
            if following != "的" and following not in _CHINESE_STATIVE and (numbered or urged):
                return True
            if any(w == "`" for w, _ in tagged[1:3]):
                return True  # 「运行 `tidewatch init`」: a verb with a command as its object
        if (
            bare.startswith(_CHINESE_COVERBS)
            and not bare.startswith(_CHINESE_NOT_COVERBS)
            and not _is_chinese_opener(clause)
            and not _says(clause, _CHINESE_MODAL | _CHINESE_ASPECT | _CHINESE_STATIVE)
            and any(
                w in _CHINESE_ACTION_VERBS
                or (len(w) > 1 and w in _CHINESE_IMPERATIVES)
                or (w == "把" and j > 0)
                for j, (w, _) in enumerate(tagged)
            )
        ):
            return True  # 「在 Sentry 仪表盘上检查…」: where or with what, then a verb of doing
        if (
            numbered
            and bare.startswith(_CHINESE_COVERBS)
            and not bare.startswith(_CHINESE_NOT_COVERBS)
        ):
            if any(_is_chinese_verb(w, t) for w, t in tag_chinese(bare[1:])):
                return True
            # 「在面团上撒盐，加入…」: the verb may open the next clause, with no subject before it.
            following = clauses[i + 1] if i + 1 < len(clauses) else ""
            after = [(w, t) for w, t in tag_chinese(following) if w.strip()]
            return bool(after) and _is_chinese_verb(*after[0])
        if i + 1 >= len(clauses) or not _is_chinese_opener(clause):
            return False
    return False


def clause_opening(clause: str) -> list[tuple[str, str]]:
    """A Chinese clause's tagged words from the one that opens what it says: after an adverb of
    order or manner (「先」, 「然后」), a time or an amount (「5 分钟内确认呼叫」, 「37 °C 孵育
    5 分钟」)."""
    tagged = [(w, t) for w, t in tag_chinese(_CHINESE_STEP_ADVERB.sub("", clause)) if w.strip()]
    while (
        len(tagged) > 1
        and (tagged[0][1] in _CHINESE_TIME_TAGS or tagged[0][1] in _CHINESE_AMOUNT_TAGS)
        and not _directional(*tagged[0])
    ):
        tagged.pop(0)
    return tagged


def tag_chinese(text: str) -> list[tuple[str, str]]:
    """``text``'s words with their part of speech. rjieba is imported on the first Chinese
    sentence: 32 MB that a process reading no Chinese does not pay."""
    import rjieba

    return rjieba.tag(text)


def _is_chinese_verb(word: str, tag: str) -> bool:
    """A verb of doing: not a verbal noun (「革命」) and not one that states."""
    return tag.startswith("v") and tag != "vn" and word not in _CHINESE_STATIVE


def _opens_with_ba(clause: str) -> bool:
    """「把密码输入两次」: 把 on its own, then what to do with the thing, and nothing done yet
    (「把关」, 「把握」 are words; 「…把生产线迁到了越南」 tells what happened)."""
    words = tag_chinese(clause)
    return bool(words) and words[0][0] == "把" and not _says(clause, _CHINESE_ASPECT)


def _says(clause: str, words: frozenset[str]) -> bool:
    """Whether one of ``words`` is a word of ``clause``, as jieba cuts it."""
    return any(w in words for w, _ in tag_chinese(clause))


def _reduplicated(word: str, tag: str) -> bool:
    """A verb said twice, which softens a suggestion: 「尝尝」, 「看看」, 「试试」."""
    return tag.startswith("v") and len(word) == 2 and word[0] == word[1]


def _directional(word: str, tag: str) -> bool:
    """A verb with its direction, which jieba tags as a place: 「盖上」, 「拿出」, 「放进」."""
    return (
        tag == "f" and len(word) == 2 and word[1] in "上下出进开起回" and word[0] not in "以之往向"
    )


def _is_chinese_opener(clause: str) -> bool:
    return clause.startswith(_CHINESE_OPENERS) or clause.endswith(("后", "时", "前"))


def _outside_quotes(text: str) -> str:
    """Japanese text without its quoted names: 「設定」は is a name, not a topic."""
    return re.sub(r"「[^」]*」|『[^』]*』", "", text)


def is_japanese_lead_in(sentence: str) -> bool:
    """「次のとおりである。」, 「次の4つの国の首都がある。」: a sentence that introduces a list."""
    return _JAPANESE_LEAD_IN.search(sentence) is not None


def is_japanese_step(sentence: str, *, numbered: bool = False) -> bool:
    """A polite step, a request or a to-do with no subject in its main clause; in a numbered list,
    a plain verb too."""
    if _JAPANESE_ADVICE.search(sentence):
        return True
    core = _TRAILING_NOTE.sub("", sentence.rstrip("。．！ ")).rstrip("。． ")
    # The main clause comes last: 「表示するには、名前を追加します。」 is a step.
    clauses = _JAPANESE_SUBORDINATE if numbered or core.endswith("こと") else _JAPANESE_COMMA
    main = clauses.split(_outside_quotes(core))[-1]
    statements = _NUMBERED_STATEMENT_ENDINGS if numbered else _JAPANESE_STATEMENT_ENDINGS
    step = _JAPANESE_STEP.search(core) or (numbered and _JAPANESE_PLAIN_STEP.search(core))
    return bool(
        step
        and (not core.endswith(statements) or _CAUSATIVE_STEP.search(core))
        and not _JAPANESE_SUBJECT.search(main)
        and not _JAPANESE_TOPIC.match(_outside_quotes(core))
    )
