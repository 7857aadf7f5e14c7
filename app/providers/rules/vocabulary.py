"""The vocabularies the matchers share: formats, languages, carriers, cuisines, jobs, places."""

from __future__ import annotations

from app.memory.prefilter import rx

FORMATS_ZH: tuple[tuple[str, str], ...] = (
    (r"markdown\s*表格|md\s*表格", "markdown_table"),
    (r"表格", "table"),
    (r"编号列表|有序列表", "numbered_list"),
    (r"要点|列表|分点|项目符号|bullet", "bullet_list"),
    (r"纯文本", "plain_text"),
    (r"json", "json"),
    (r"markdown", "markdown"),
)
FORMATS_EN: tuple[tuple[str, str], ...] = (
    (r"markdown tables?", "markdown_table"),
    (r"tables?|tabular(?: format)?", "table"),
    (r"numbered lists?", "numbered_list"),
    (r"bullet(?:ed)? (?:points?|lists?)|bullets|bulleted", "bullet_list"),
    (r"plain text", "plain_text"),
    (r"json", "json"),
    (r"markdown", "markdown"),
)
FORMAT_LABEL = {
    "markdown_table": ("Markdown 表格", "Markdown tables"),
    "table": ("表格", "tables"),
    "numbered_list": ("编号列表", "numbered lists"),
    "bullet_list": ("要点列表", "bullet points"),
    "plain_text": ("纯文本", "plain text"),
    "json": ("JSON", "JSON"),
    "markdown": ("Markdown", "Markdown"),
}

LANGUAGES: dict[str, tuple[str, str, str]] = {
    # surface → (code, zh label, en label)
    "简体中文": ("zh", "中文", "Chinese"),
    "繁体中文": ("zh-Hant", "繁体中文", "Traditional Chinese"),
    "中文": ("zh", "中文", "Chinese"),
    "汉语": ("zh", "中文", "Chinese"),
    "普通话": ("zh", "中文", "Chinese"),
    "粤语": ("yue", "粤语", "Cantonese"),
    "英文": ("en", "英文", "English"),
    "英语": ("en", "英文", "English"),
    "日语": ("ja", "日语", "Japanese"),
    "日文": ("ja", "日语", "Japanese"),
    "韩语": ("ko", "韩语", "Korean"),
    "韩文": ("ko", "韩语", "Korean"),
    "法语": ("fr", "法语", "French"),
    "德语": ("de", "德语", "German"),
    "西班牙语": ("es", "西班牙语", "Spanish"),
    "english": ("en", "英文", "English"),
    "chinese": ("zh", "中文", "Chinese"),
    "mandarin": ("zh", "中文", "Chinese"),
    "cantonese": ("yue", "粤语", "Cantonese"),
    "japanese": ("ja", "日语", "Japanese"),
    "korean": ("ko", "韩语", "Korean"),
    "french": ("fr", "法语", "French"),
    "german": ("de", "德语", "German"),
    "spanish": ("es", "西班牙语", "Spanish"),
    "italian": ("it", "意大利语", "Italian"),
    "portuguese": ("pt", "葡萄牙语", "Portuguese"),
    "russian": ("ru", "俄语", "Russian"),
    "意大利语": ("it", "意大利语", "Italian"),
    "葡萄牙语": ("pt", "葡萄牙语", "Portuguese"),
    "俄语": ("ru", "俄语", "Russian"),
    "荷兰语": ("nl", "荷兰语", "Dutch"),
    "瑞典语": ("sv", "瑞典语", "Swedish"),
    "挪威语": ("no", "挪威语", "Norwegian"),
    "丹麦语": ("da", "丹麦语", "Danish"),
    "芬兰语": ("fi", "芬兰语", "Finnish"),
    "波兰语": ("pl", "波兰语", "Polish"),
    "捷克语": ("cs", "捷克语", "Czech"),
    "乌克兰语": ("uk", "乌克兰语", "Ukrainian"),
    "希腊语": ("el", "希腊语", "Greek"),
    "土耳其语": ("tr", "土耳其语", "Turkish"),
    "阿拉伯语": ("ar", "阿拉伯语", "Arabic"),
    "希伯来语": ("he", "希伯来语", "Hebrew"),
    "波斯语": ("fa", "波斯语", "Persian"),
    "印地语": ("hi", "印地语", "Hindi"),
    "泰语": ("th", "泰语", "Thai"),
    "越南语": ("vi", "越南语", "Vietnamese"),
    "印尼语": ("id", "印尼语", "Indonesian"),
    "马来语": ("ms", "马来语", "Malay"),
    "闽南语": ("nan", "闽南语", "Hokkien"),
    "上海话": ("wuu", "上海话", "Shanghainese"),
    "dutch": ("nl", "荷兰语", "Dutch"),
    "swedish": ("sv", "瑞典语", "Swedish"),
    "norwegian": ("no", "挪威语", "Norwegian"),
    "danish": ("da", "丹麦语", "Danish"),
    "finnish": ("fi", "芬兰语", "Finnish"),
    "polish": ("pl", "波兰语", "Polish"),
    "czech": ("cs", "捷克语", "Czech"),
    "ukrainian": ("uk", "乌克兰语", "Ukrainian"),
    "greek": ("el", "希腊语", "Greek"),
    "turkish": ("tr", "土耳其语", "Turkish"),
    "arabic": ("ar", "阿拉伯语", "Arabic"),
    "hebrew": ("he", "希伯来语", "Hebrew"),
    "persian": ("fa", "波斯语", "Persian"),
    "farsi": ("fa", "波斯语", "Persian"),
    "hindi": ("hi", "印地语", "Hindi"),
    "urdu": ("ur", "乌尔都语", "Urdu"),
    "bengali": ("bn", "孟加拉语", "Bengali"),
    "tamil": ("ta", "泰米尔语", "Tamil"),
    "thai": ("th", "泰语", "Thai"),
    "vietnamese": ("vi", "越南语", "Vietnamese"),
    "indonesian": ("id", "印尼语", "Indonesian"),
    "malay": ("ms", "马来语", "Malay"),
    "tagalog": ("tl", "菲律宾语", "Tagalog"),
    "swahili": ("sw", "斯瓦希里语", "Swahili"),
}
LANG_ZH_ALT = "|".join(sorted((k for k in LANGUAGES if not k.isascii()), key=len, reverse=True))
LANG_EN_ALT = "|".join(k for k in LANGUAGES if k.isascii())
# Also a cuisine ("I like Thai"): a bare "I like X" names the food, not the reply language.
_LANG_EN_FOOD = frozenset("thai vietnamese greek turkish indonesian malay".split())
LANG_EN_PREF_ALT = "|".join(k for k in LANGUAGES if k.isascii() and k not in _LANG_EN_FOOD)

_CARRIERS: tuple[tuple[str, str], ...] = (
    # pattern → canonical value (merges 顺丰 and SF Express)
    (r"顺丰(?:快递|速运)?|(?i:sf\s*express)", "SF Express"),
    (r"京东(?:快递|物流)?|(?i:jd\s*logistics)", "JD Logistics"),
    (r"中通(?:快递)?", "ZTO Express"),
    (r"圆通(?:快递)?", "YTO Express"),
    (r"申通(?:快递)?", "STO Express"),
    (r"韵达(?:快递)?", "Yunda Express"),
    (r"德邦(?:快递|物流)?", "Deppon"),
    (r"极兔(?:快递)?", "J&T Express"),
    (r"中国邮政|邮政|(?i:\bems\b)", "China Post EMS"),
    (r"联邦快递|(?i:\bfedex\b)", "FedEx"),
    (r"(?i:\bups\b)", "UPS"),
    (r"(?i:\bdhl\b)", "DHL"),
    (r"(?i:\busps\b)", "USPS"),
    (r"(?i:\broyal mail\b)", "Royal Mail"),
)
CARRIER_RES = tuple((rx(p), v) for p, v in _CARRIERS)
ANY_CARRIER = rx("|".join(f"(?:{p})" for p, _ in _CARRIERS))
# Substrings one of which every carrier mention contains: a cheap test before the regexes.
_CARRIER_KEYS = tuple(
    "顺丰 京东 中通 圆通 申通 韵达 德邦 极兔 邮政 联邦快递 "
    "sf jd ems fedex ups dhl usps royal".split()
)


def may_name_carrier(text: str) -> bool:
    low = text.lower()
    return any(k in low for k in _CARRIER_KEYS)


DELIVERY_CUE_ZH = rx(r"快递|发货|寄|配送|物流|送货|邮寄|发件|走|发")
DELIVERY_CUE_EN = rx(
    r"(?i)\b(?:ship|shipping|shipped|send|deliver|delivery|deliveries|mail|parcels?|packages?|"
    r"shipments?|courier|carrier|prefer|use|using|by default)\b"
)

CUISINES_ZH = (
    "川菜 粤菜 湘菜 鲁菜 苏菜 浙菜 闽菜 徽菜 东北菜 西北菜 新疆菜 云南菜 客家菜 潮汕菜 本帮菜 "
    "日本料理 日料 日本菜 韩国料理 韩料 韩国菜 泰国菜 泰餐 越南菜 印度菜 意大利菜 意餐 法餐 法国菜 "
    "西餐 中餐 火锅 烧烤 海鲜 素菜 墨西哥菜 西班牙菜 清淡 辣 甜食"
).split()
DISHES_EN = (
    r"sushi|ramen|pizza|tacos|curry|dim sum|hot ?pot|bbq|barbecue|pasta|seafood|spicy food|"
    r"thai|indian|mexican|korean|sichuan|cantonese|italian|japanese|chinese|french|vietnamese"
)

JOB_NOUNS_ZH = tuple(
    (
        "工程师 程序员 开发者 开发 设计师 经理 老师 教师 医生 护士 律师 会计师 会计 分析师 架构师 "
        "研究员 科学家 学生 研究生 博士生 本科生 销售 运营 顾问 总监 主管 创始人 合伙人 作家 记者 "
        "编辑 实习生 教授 讲师 司机 厨师 专员 助理 总裁 CEO CTO CFO COO 测试 运维 DBA 产品 负责人"
    ).split()
)
JOB_NOUNS_EN = (
    r"engineer|developer|programmer|manager|designer|teacher|doctor|nurse|lawyer|accountant|"
    r"analyst|architect|researcher|scientist|student|consultant|founder|co-founder|director|"
    r"writer|journalist|editor|professor|lecturer|intern|administrator|marketer|salesperson|"
    r"recruiter|lead|owner|ceo|cto|cfo|coo|pm|sre|specialist|officer|executive|chef|driver|"
    r"pharmacist|dentist|therapist|artist|photographer|translator|tester|devops"
)
PLACES_ZH = (
    "北京 上海 广州 深圳 杭州 成都 南京 武汉 西安 重庆 天津 苏州 长沙 郑州 青岛 厦门 大连 宁波 "
    "合肥 昆明 沈阳 哈尔滨 济南 福州 香港 澳门 台北 新加坡 东京 大阪 首尔 纽约 伦敦 巴黎 柏林 "
    "旧金山 硅谷 洛杉矶 西雅图 悉尼 多伦多 温哥华 美国 英国 日本 德国 法国 加拿大 澳洲 澳大利亚 "
    "国外 海外 老家 浦东 朝阳 海淀"
).split()
_COMPANY_SUFFIX_ZH = (
    "公司",
    "集团",
    "科技",
    "银行",
    "大学",
    "学院",
    "医院",
    "研究院",
    "研究所",
    "实验室",
    "工作室",
)

TECH_STOP = frozenset(
    "the a an it this that my our i we markdown json table tables english chinese "
    "mandarin japanese korean french german spanish ups dhl fedex usps ems sf".split()
)
