"""Known logical text for the OCR ground-truth pages (`bench/ocr_truth.py`): plain sentences of
ordinary prose per script, and mixed sentences (RTL with Latin words and numbers)."""

from __future__ import annotations

HEBREW = (
    "הוועדה המקומית לתכנון ובנייה אישרה אתמול את התוכנית החדשה לשכונת המגורים בצפון העיר.",
    "לפי הנתונים שפורסמו השבוע, מספר התלמידים בבתי הספר היסודיים עלה בשנה האחרונה.",
    "המשרד הודיע כי הבקשות יתקבלו עד סוף החודש, ולאחר מכן לא תינתן הארכה נוספת.",
    "בית המשפט המחוזי קבע כי החוזה בין הצדדים בטל, משום שלא נחתם כדין.",
    "החוקרים מצאו שהשינויים במזג האוויר משפיעים על עונת הפריחה של עצי השקד.",
    "הספרייה העירונית תהיה פתוחה בימי שישי בבוקר, והכניסה לכל התושבים ללא תשלום.",
    "על כל עובד למלא את הטופס המצורף ולהגיש אותו למחלקת משאבי אנוש.",
    "הרכבת לירושלים יוצאת מהתחנה המרכזית בכל שעה עגולה, גם בשעות הערב.",
    "המחקר נערך בשיתוף עם האוניברסיטה העברית ובתמיכת הקרן הלאומית למדע.",
    "הדוח השנתי מציג ירידה בהוצאות התפעול ועלייה קלה בהכנסות מתרומות.",
    "ההחלטה התקבלה פה אחד לאחר דיון ארוך בישיבת המועצה.",
    "הילדים שיחקו בגן הציבורי עד שהשמש שקעה מאחורי ההרים.",
    "אין לפרסם את פרטי המקרה ללא אישור מפורש מאת הנהלת בית החולים.",
    "המנהל ביקש מכל המחלקות להגיש הצעות לשיפור השירות לציבור.",
    "בחודשים הקרובים יחלו עבודות השיפוץ בבניין הישן שליד הנמל.",
    "התערוכה מציגה צילומים נדירים מחיי היום יום בערים הקטנות.",
)

ARABIC = (
    "وافقت اللجنة المحلية للتخطيط والبناء أمس على المشروع الجديد في شمال المدينة.",
    "وفقا للبيانات التي نشرت هذا الأسبوع، ارتفع عدد الطلاب في المدارس الابتدائية.",
    "أعلنت الوزارة أن الطلبات تقبل حتى نهاية الشهر، ولا يجوز تمديد الموعد بعد ذلك.",
    "قررت المحكمة أن العقد بين الطرفين باطل لأنه لم يوقع وفقا للقانون.",
    "وجد الباحثون أن تغير المناخ يؤثر في موسم إزهار أشجار اللوز.",
    "تفتح المكتبة العامة أبوابها صباح يوم الجمعة، والدخول مجاني لجميع السكان.",
    "يجب على كل موظف أن يملأ الاستمارة المرفقة ويسلمها إلى إدارة الموارد البشرية.",
    "يغادر القطار المحطة المركزية كل ساعة، حتى في ساعات المساء.",
    "أجريت الدراسة بالتعاون مع الجامعة وبدعم من الصندوق الوطني للعلوم.",
    "يعرض التقرير السنوي انخفاضا في نفقات التشغيل وزيادة طفيفة في الإيرادات.",
    "اتخذ القرار بالإجماع بعد نقاش طويل في جلسة المجلس.",
    "لعب الأطفال في الحديقة العامة حتى غابت الشمس خلف الجبال.",
    "لا يجوز نشر تفاصيل القضية دون إذن صريح من إدارة المستشفى.",
    "طلب المدير من جميع الأقسام تقديم مقترحات لتحسين الخدمة العامة.",
    "ستبدأ أعمال الترميم في المبنى القديم قرب الميناء خلال الأشهر القادمة.",
    "يعرض المعرض صورا نادرة من الحياة اليومية في المدن الصغيرة.",
)

ENGLISH = (
    "The local planning committee approved the new housing plan for the northern district yesterday.",
    "According to figures published this week, the number of primary school pupils rose last year.",
    "The ministry said that applications will be accepted until the end of the month, with no extension.",
    "The district court ruled that the contract between the parties was void because it was never signed.",
    "Researchers found that changes in the weather affect the flowering season of almond trees.",
    "The public library will open on Friday mornings, and entry is free for every resident.",
    "Each employee must complete the attached form and hand it to the human resources office.",
    "The train to the capital leaves the central station every hour, including the evening hours.",
    "The study was carried out together with the university and funded by the national science fund.",
    "The annual report shows lower operating costs and a small increase in income from donations.",
    "The decision was taken unanimously after a long debate at the council meeting.",
    "The children played in the public garden until the sun set behind the hills.",
    "Details of the case must not be published without the written consent of the hospital.",
    "The director asked every department to submit proposals for improving public service.",
    "Renovation of the old building next to the harbour will begin in the coming months.",
    "The exhibition shows rare photographs of daily life in small towns.",
)

MIXED_HEBREW = (
    "הכנס השנתי של Python Israel ייערך ב-12 במרץ 2025 באולם הגדול.",
    "לפי סעיף 14 לחוק, יש להגיש את הבקשה דרך האתר gov.il עד השעה 16:00.",
    "המערכת עברה ל-Linux בגרסה 6.1, והשדרוג הסתיים בתוך 3 ימים.",
    "מחיר המנוי החודשי עלה מ-49 ל-59 שקלים, כך הודיעה חברת Netflix.",
    "בדוח של OECD לשנת 2023 מופיעה ישראל במקום 7 מתוך 38 מדינות.",
    "הקובץ report.pdf נשלח לכל חברי הוועדה ביום שני בבוקר.",
)

MIXED_ARABIC = (
    "تم تحديث نظام Linux على جميع الخوادم في 15 مايو 2024 دون توقف الخدمة.",
    "وفقا للمادة 22 من القانون، تقدم الطلبات عبر موقع www.gov.eg قبل الساعة 14:00.",
    "ارتفع سعر الاشتراك الشهري من 120 إلى 150 جنيها، كما أعلنت شركة Vodafone.",
    "يضع تقرير UNESCO لعام 2022 البلاد في المرتبة 9 من أصل 45 دولة.",
    "أرسل الملف budget.xlsx إلى أعضاء اللجنة صباح يوم الاثنين.",
    "شارك أكثر من 300 مهندس في مؤتمر IEEE الذي عقد في القاهرة.",
)

# script -> (sentences, second-language sentences for a mixed page or (), html direction)
POOLS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "he": (HEBREW, (), "rtl"),
    "ar": (ARABIC, (), "rtl"),
    "en": (ENGLISH, (), "ltr"),
    "mixed_he": (MIXED_HEBREW, ENGLISH, "rtl"),
    "mixed_ar": (MIXED_ARABIC, ENGLISH, "rtl"),
}

# the language data the fleet's CPU chain uses for each kind of page (routing's chains), so plain
# Tesseract is given the same data
LANGS = {
    "he": "heb+eng",
    "ar": "ara+eng",
    "en": "eng",
    "mixed_he": "heb+eng",
    "mixed_ar": "ara+eng",
}
