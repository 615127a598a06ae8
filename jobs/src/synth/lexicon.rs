//! Word lists the synthetic world is written from.
//!
//! Entities are invented names (no real person is made to say anything);
//! real names appear only where a real query's reference answer contains
//! them, and then verbatim.

/// An interest area: what users follow and what posts are about.
pub struct Category {
    pub name: &'static str,
    /// Subjects a post in this area is about; one subject per referenced post
    /// lets a user's history be tied to exactly the posts they engaged with.
    pub subjects: &'static [&'static str],
    /// Things people say about a subject of this area (`{}` is the subject).
    pub remarks: &'static [&'static str],
}

pub const CATEGORIES: &[Category] = &[
    Category {
        name: "明星",
        subjects: &["林星辰", "苏沐阳", "顾言之", "沈清欢", "江亦凡", "许知夏", "陆景深", "叶南溪", "周以宁", "程屿", "宋晚晴", "秦朗月"],
        remarks: &[
            "{}的新造型太好看了",
            "{}今天的直播我全程看完了",
            "为{}打call，新歌循环一整天",
            "{}的演唱会门票又没抢到",
            "等{}的新剧等得好辛苦",
            "{}的生日应援准备好了",
        ],
    },
    Category {
        name: "体育",
        subjects: &[
            "城市篮球联赛",
            "春季马拉松",
            "乒乓球公开赛",
            "女排联赛",
            "足球超级杯",
            "游泳锦标赛",
            "羽毛球大师赛",
            "电竞联赛总决赛",
            "自行车环湖赛",
            "冰球邀请赛",
        ],
        remarks: &[
            "{}今晚的比赛太精彩了",
            "{}的门票终于到手",
            "{}最后一分钟绝杀",
            "看完{}热血沸腾",
            "{}的赛程出来了，周末去现场",
            "{}的解说真专业",
        ],
    },
    Category {
        name: "科技",
        subjects: &[
            "新款折叠屏手机",
            "国产大模型",
            "家用机器人",
            "固态电池",
            "智能手表",
            "卫星通信手机",
            "开源操作系统",
            "AR眼镜",
            "量子计算机",
            "无人驾驶出租车",
        ],
        remarks: &[
            "{}的发布会看完了，参数很能打",
            "入手了{}，体验一周说说感受",
            "{}会不会改变我们的生活",
            "{}的价格比预想的便宜",
            "排队体验了{}",
            "{}的评测出来了",
        ],
    },
    Category {
        name: "美食",
        subjects: &[
            "重庆火锅",
            "手打柠檬茶",
            "烤羊肉串",
            "螺蛳粉",
            "芒果千层",
            "糖油粑粑",
            "潮汕牛肉丸",
            "过桥米线",
            "生煎包",
            "麻辣小龙虾",
        ],
        remarks: &[
            "今晚的{}太香了",
            "排了一个小时队终于吃到{}",
            "在家复刻{}，成功了",
            "{}yyds",
            "求推荐好吃的{}店",
            "{}配冰可乐，快乐加倍",
        ],
    },
    Category {
        name: "旅行",
        subjects: &[
            "川西自驾",
            "江南古镇",
            "雪山徒步",
            "海岛度假",
            "沙漠星空营地",
            "草原骑马",
            "古城夜游",
            "高铁慢旅行",
            "边境小城",
            "森林露营",
        ],
        remarks: &[
            "{}的照片终于修完了",
            "{}攻略整理好了，收藏",
            "{}第三天，风景绝了",
            "下个假期想去{}",
            "{}路上遇到的人都很友善",
            "{}回来晒黑了两个度",
        ],
    },
    Category {
        name: "影视",
        subjects: &[
            "谍战剧《暗河》",
            "古装剧《长风渡》",
            "悬疑剧《迷雾追踪》",
            "动画电影《山海》",
            "都市剧《早安城市》",
            "纪录片《大河》",
            "科幻片《星海》",
            "喜剧片《开心就好》",
            "综艺《一起出发》",
            "年代剧《小巷人家》",
        ],
        remarks: &[
            "{}的大结局哭死我了",
            "{}的演员演技在线",
            "二刷{}，细节太多了",
            "{}的配乐很戳我",
            "{}的剧情越来越好看",
            "{}的收视率又涨了",
        ],
    },
    Category {
        name: "游戏",
        subjects: &[
            "开放世界新作",
            "国风手游",
            "像素独立游戏",
            "赛车模拟器",
            "卡牌对战游戏",
            "生存建造游戏",
            "格斗游戏大赛",
            "解谜小游戏",
            "多人射击游戏",
            "养成类手游",
        ],
        remarks: &["{}的新版本更新了", "熬夜打{}，通关了", "{}的剧情太好哭", "{}的新角色抽到了", "{}的联机体验很棒", "{}的画面真的顶"],
    },
    Category {
        name: "财经",
        subjects: &[
            "A股大盘",
            "新能源板块",
            "黄金价格",
            "房贷利率",
            "基金定投",
            "人民币汇率",
            "消费券",
            "个人养老金",
            "跨境电商",
            "芯片概念股",
        ],
        remarks: &["{}今天又涨了", "关于{}的分析写得很透彻", "{}波动太大，先观望", "{}的新政策出来了", "聊聊我对{}的看法", "{}跌麻了"],
    },
    Category {
        name: "教育",
        subjects: &[
            "高考志愿填报",
            "考研复试",
            "四六级考试",
            "留学申请",
            "教师资格证",
            "公务员考试",
            "幼升小",
            "期末复习",
            "职业技能培训",
            "在线网课",
        ],
        remarks: &["{}终于结束了", "{}的经验分享给大家", "{}压力好大", "{}的资料整理好了", "为{}的同学们加油", "{}的成绩出来了"],
    },
    Category {
        name: "健康",
        subjects: &["夜跑打卡", "减脂餐", "八段锦", "早睡计划", "体检报告", "瑜伽课", "护眼方法", "控糖饮食", "健身房撸铁", "冥想练习"],
        remarks: &["坚持{}第三十天", "{}真的有用", "分享我的{}心得", "{}让我精神好多了", "今天的{}完成了", "朋友推荐的{}试试看"],
    },
    Category {
        name: "宠物",
        subjects: &["橘猫", "柯基", "布偶猫", "金毛", "仓鼠", "边牧", "流浪猫救助", "宠物医院", "猫咖", "柴犬"],
        remarks: &["我家{}又拆家了", "{}今天好乖", "{}的日常太治愈", "带{}去打疫苗", "{}的新玩具到了", "有没有人和我一样被{}萌化"],
    },
    Category {
        name: "时尚",
        subjects: &["春季穿搭", "国货彩妆", "小众香水", "通勤包", "复古耳饰", "运动鞋", "汉服", "护肤流程", "发型改造", "平价美甲"],
        remarks: &["{}分享来了", "入坑{}半年的感受", "{}求推荐", "{}今日份", "被{}种草了", "{}真的很显气质"],
    },
    Category {
        name: "汽车",
        subjects: &["新能源SUV", "家用轿车", "智能驾驶辅助", "充电桩", "房车旅行", "二手车", "摩托车", "越野车改装", "车展", "电动车续航"],
        remarks: &["试驾了{}，说说感受", "{}的价格又降了", "{}到底值不值得买", "{}排队的人好多", "{}的新技术看懂了", "提车啦，{}"],
    },
    Category {
        name: "音乐",
        subjects: &[
            "草莓音乐节",
            "民谣专场",
            "交响音乐会",
            "说唱比赛",
            "乐队巡演",
            "新专辑",
            "钢琴独奏会",
            "KTV新歌",
            "戏曲演出",
            "电子音乐派对",
        ],
        remarks: &["{}现场太燃了", "{}的歌单分享", "{}单曲循环中", "抢到了{}的票", "{}的返场曲好好听", "{}让我哭了"],
    },
    Category {
        name: "读书",
        subjects: &["推理小说", "历史传记", "诗集", "科普读物", "网络文学", "读书会", "独立书店", "散文集", "经典名著", "漫画"],
        remarks: &["最近在读{}，推荐", "{}的摘抄", "周末去了{}", "{}读完了，写点感想", "{}里的一句话很打动我", "{}书单更新"],
    },
    Category {
        name: "社会",
        subjects: &[
            "社区志愿服务",
            "地铁新线开通",
            "老旧小区改造",
            "垃圾分类",
            "城市夜市",
            "防诈骗宣传",
            "交通新规",
            "公益献血",
            "便民服务中心",
            "菜市场升级",
        ],
        remarks: &["{}今天正式启动", "身边的{}做得真好", "关于{}大家怎么看", "{}给生活带来了便利", "参加了{}，很有意义", "{}的消息刷屏了"],
    },
    Category {
        name: "职场",
        subjects: &["年终总结", "跳槽面试", "远程办公", "加班文化", "实习生活", "团建活动", "副业", "职场新人", "升职加薪", "通勤路上"],
        remarks: &["{}终于搞定了", "{}的一些经验", "{}太难了", "聊聊{}", "{}的一天", "{}让我学到很多"],
    },
    Category {
        name: "亲子",
        subjects: &[
            "宝宝辅食",
            "亲子游",
            "绘本阅读",
            "儿童节活动",
            "幼儿园开学",
            "早教课",
            "育儿经验",
            "儿童安全座椅",
            "二胎生活",
            "家庭手工",
        ],
        remarks: &["{}分享", "{}记录一下", "{}太不容易了", "{}的小妙招", "关于{}的困惑", "{}的快乐时光"],
    },
];

/// Bracketed emoticons as Weibo renders them.
pub const EMOTICONS: &[&str] = &[
    "[哈哈]",
    "[心]",
    "[泪]",
    "[doge]",
    "[赞]",
    "[微笑]",
    "[允悲]",
    "[good]",
    "[抱一抱]",
    "[憧憬]",
    "[鼓掌]",
    "[吃瓜]",
    "[二哈]",
    "[作揖]",
    "[太开心]",
    "[酷]",
];

/// Everyday chatter with no event in it.
pub const CHATTER: &[&str] = &[
    "早上好，新的一天加油",
    "今天好累，早点休息",
    "周末愉快",
    "又是摸鱼的一天",
    "求推荐好看的电视剧",
    "下班路上的晚霞好美",
    "今天的咖啡有点苦",
    "打卡",
    "终于周五了",
    "有人一起去跑步吗",
    "这个天气适合睡觉",
    "记录一下今天的心情",
    "刚看到一只很可爱的小狗",
    "外卖又迟到了",
    "晚安",
    "最近睡眠不太好",
    "收拾房间花了一下午",
    "今天学会了一道新菜",
];

/// Chatter that names a place (`{}` is the location).
pub const PLACE_CHATTER: &[&str] = &[
    "{}今天天气不错，适合出门",
    "在{}吃到了好吃的面",
    "{}的早高峰又堵了",
    "周末在{}逛街",
    "{}的夜景真美",
    "{}最近降温了，大家注意保暖",
    "在{}出差中",
    "{}的公园花开了",
    "{}今天有点闷热",
    "回{}的路上",
    "{}有什么好玩的地方推荐吗",
    "{}的房租又涨了",
    "{}下雨了，记得带伞",
    "在{}遇到了老同学",
    "{}本地人报个到",
];

/// Advertising and spam, the usual noise of a topic search.
pub const SPAM: &[&str] = &[
    "转发抽奖，送三台手机",
    "关注我，每天分享好物",
    "限时优惠，点击链接领取",
    "招聘兼职，日结工资",
    "低价出售二手教材",
    "直播间福利来啦",
    "新店开业全场八折",
    "扫码加群领红包",
];

/// Reactions that mention a topic without saying anything about it (`{}` is the topic).
pub const TOPIC_REACTIONS: &[&str] = &[
    "#{}# 围观",
    "{}这事怎么看",
    "蹲一个{}的后续",
    "{}又上热搜了",
    "刚刷到{}",
    "{}评论区好热闹",
    "关于{}，我保持沉默",
    "{}，吃瓜群众来了",
    "{}到底是真的吗",
    "有人知道{}的最新进展吗",
];

/// Words a user with a given emotion tends to use (order follows `EMOTIONS`).
pub const EMOTION_WORDS: &[(&str, &[&str])] = &[
    ("积极", &["太棒了", "好开心", "支持", "喜欢", "期待", "感动", "赞赞赞"]),
    ("愤怒", &["气死我了", "太离谱了", "无语", "凭什么", "过分", "忍不了"]),
    ("悲伤", &["好难过", "泪目", "心疼", "唉", "想哭", "舍不得"]),
    ("恐惧", &["好可怕", "吓死了", "担心", "不敢想", "害怕", "细思极恐"]),
    ("惊奇", &["没想到", "震惊", "居然", "天哪", "第一次见", "太意外了"]),
    ("无情绪", &["知道了", "记录一下", "转发", "看了", "了解", "mark"]),
];

pub const NICK_HEADS: &[&str] = &["小", "阿", "大", "老", "甜", "酷", "晴", "夜", "风", "月", "星", "云", "橙", "鱼", "糖", "雪"];
pub const NICK_BODIES: &[&str] = &[
    "兔子", "猫猫", "木木", "豆豆", "桃子", "柚子", "小熊", "阿飞", "二狗", "团子", "饭饭", "花卷", "土豆", "西瓜", "汤圆", "果冻", "七七",
    "一一",
];

pub const PLATFORMS: &[&str] = &["微博", "抖音", "小红书", "今日头条", "哔哩哔哩", "微信公众号", "快手", "知乎"];
pub const CLIENTS: &[&str] = &["iPhone客户端", "Android", "微博网页版", "HUAWEI Mate", "小米手机", "iPad客户端", "vivo手机", "OPPO手机"];
pub const PROVINCES: &[&str] = &[
    "北京", "上海", "广东", "四川", "重庆", "浙江", "江苏", "湖北", "湖南", "山东", "河南", "福建", "陕西", "新疆", "江西", "云南", "香港",
    "海外",
];
pub const VERIFIED: &[&str] =
    &["知名娱乐博主", "体育博主", "科技博主", "美食博主", "旅行博主", "财经博主", "教育博主", "健康博主", "媒体账号", "超话主持人"];

/// English words for the misinformation knowledge base.
pub const FACT_CHECK_OUTLETS: &[&str] = &["FactWatch", "TruthMeter", "ClaimCheck", "VerifyDesk", "PolicyFacts", "NewsAudit"];
pub const EN_FILLER_TOPICS: &[&str] = &[
    "state budget negotiations",
    "a county school board vote",
    "highway maintenance spending",
    "a city council zoning debate",
    "unemployment insurance rules",
    "a senate campaign advertisement",
    "prescription drug prices",
    "voter registration deadlines",
    "wildfire prevention funding",
    "a governor's tax proposal",
    "public transit ridership",
    "minimum wage legislation",
];
