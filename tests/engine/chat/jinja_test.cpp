// SPDX-License-Identifier: GPL-3.0-or-later
// The Jinja interpreter, construct by construct: each case renders a small template against a
// JSON context and compares with what Jinja2 (as transformers configures it: trim_blocks,
// lstrip_blocks) prints; the refusals name line and column and the construct.
#include "engine/chat/jinja.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using ws::chat::jinja::Template;
using ws::chat::jinja::ValueDict;

// The output, or "ERROR: <message>".
std::string render(const std::string& source, const std::string& contextJson = "{}",
                   const ws::chat::jinja::RenderOptions& options = {}) {
    auto t = Template::parse(source);
    if (!t) return "ERROR: " + t.error().message;
    auto context = ws::chat::jinja::valueFromJson(contextJson);
    EXPECT_TRUE(context.ok() && context->isDict()) << contextJson;
    if (!context || !context->isDict()) return "bad context";
    auto out = t->render(context->asDict(), options);
    if (!out) return "ERROR: " + out.error().message;
    return *out;
}

TEST(JinjaSyntax, TextOutputAndComments) {
    EXPECT_EQ(render("plain text"), "plain text");
    EXPECT_EQ(render("a{{ x }}b", R"({"x": "X"})"), "aXb");
    EXPECT_EQ(render("a{# a comment {{ x }} #}b"), "ab");
    EXPECT_EQ(render("{ not a tag } {x}"), "{ not a tag } {x}");
    EXPECT_EQ(render(""), "");
}

TEST(JinjaSyntax, WhitespaceControlWithDashes) {
    EXPECT_EQ(render("a  \n  {{- 'b' -}}  \n  c"), "abc");
    EXPECT_EQ(render("a \n{%- if true %} b {% endif -%}\n c"), "a b c");
    EXPECT_EQ(render("a  {#- gone -#}  b"), "ab");
}

TEST(JinjaSyntax, TrimBlocksAndLstripBlocksAsTransformersSetsThem) {
    // trim_blocks: the newline after a block tag goes; lstrip_blocks: the indentation before it.
    EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\nafter"), "yes\nafter");
    EXPECT_EQ(render("line\n    {% if true %}\n    kept indent\n    {% endif %}\nend"),
              "line\n    kept indent\nend");
    // Not for expressions: `{{ }}` keeps its surroundings.
    EXPECT_EQ(render("  {{ 'x' }}\n"), "  x\n");
    // Comments take both too.
    EXPECT_EQ(render("a\n  {# c #}\nb"), "a\nb");
    // `+` turns them off for one tag.
    EXPECT_EQ(render("  {%+ if true %}\nx{% endif +%}\ny"), "  x\ny");
    // Text before the tag on the same line keeps its spaces.
    EXPECT_EQ(render("x  {% if true %}y{% endif %}"), "x  y");
}

TEST(JinjaSyntax, Literals) {
    EXPECT_EQ(render("{{ 'single' }} {{ \"double\" }} {{ 'it\\'s' }} {{ 'a\\nb' }}"),
              "single double it's a\nb");
    EXPECT_EQ(render("{{ '\\u00e9\\x41' }}"),
              "\xC3\xA9"
              "A");
    EXPECT_EQ(render("{{ 42 }} {{ -7 }} {{ 3.5 }} {{ 1e3 }} {{ 2.0 }}"), "42 -7 3.5 1000.0 2.0");
    EXPECT_EQ(render("{{ true }} {{ False }} {{ none }} {{ None }}"), "True False None None");
    EXPECT_EQ(render("{{ [1, 'a', none] }} {{ {'k': 1, 'j': [true]} }}"),
              "[1, 'a', None] {'k': 1, 'j': [True]}");
    EXPECT_EQ(render("{% for x in ('a', 'b') %}{{ x }}{% endfor %}"), "ab");  // a tuple
    EXPECT_EQ(render("{{ 'ab' 'cd' }}"), "abcd");
}

TEST(JinjaSyntax, AttributeSubscriptAndSlices) {
    const std::string ctx =
        R"({"m": {"role": "user", "content": "hi"}, "l": [1, 2, 3, 4], "s": "héllo"})";
    EXPECT_EQ(render("{{ m.role }} {{ m['content'] }} {{ l[0] }} {{ l[-1] }} {{ l.1 }}", ctx),
              "user hi 1 4 2");
    EXPECT_EQ(render("{{ l[1:] }} {{ l[:2] }} {{ l[::-1] }} {{ l[1:3] }} {{ l[::2] }}", ctx),
              "[2, 3, 4] [1, 2] [4, 3, 2, 1] [2, 3] [1, 3]");
    EXPECT_EQ(render("{{ s[1] }} {{ s[1:3] }} {{ s[::-1] }} {{ s|length }}", ctx),
              "\xC3\xA9 \xC3\xA9l oll\xC3\xA9h 5");
    EXPECT_EQ(render("[{{ m.missing }}][{{ l[10] }}][{{ m.role.nope }}]", ctx), "[][][]");
}

TEST(JinjaSyntax, ArithmeticAndConcatenation) {
    EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} "
                     "{{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 - 0.5 }}"),
              "7 9 3 -4 1 2 3.5 1024 0.5");
    EXPECT_EQ(render("{{ 'a' + 'b' }} {{ 'n' ~ 1 ~ none ~ undefined_name }} {{ 'ab' * 3 }}"),
              "ab n1None ababab");
    EXPECT_EQ(render("{{ [1] + [2] }}"), "[1, 2]");
    // Filters bind tighter than +: the Llama 3 template relies on it.
    EXPECT_EQ(render("{{ '<' + x | trim + '>' }}", R"({"x": "  y  "})"), "<y>");
}

TEST(JinjaSyntax, ComparisonsLogicAndMembership) {
    EXPECT_EQ(render("{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' == 'a' }} {{ 1 != 1.0 }} {{ 1 < 2 < 3 }}"),
              "True False True False True");
    EXPECT_EQ(render("{{ true and 'x' }} {{ 0 or 'y' }} {{ not 0 }} {{ not 1 or 1 }}"),
              "x y True 1");
    EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} "
                     "{{ 'z' not in 'abc' }} {{ 'x' in nothing }}"),
              "True True True True False");
    EXPECT_EQ(render("{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'y' if 0 }}]"),
              "yes no []");
}

TEST(JinjaSyntax, Tests) {
    const std::string ctx = R"({"s": "x", "n": null, "d": {"a": 1}, "l": [1], "i": 3, "f": 1.5})";
    EXPECT_EQ(render("{{ s is defined }} {{ q is defined }} {{ q is undefined }} {{ n is none }} "
                     "{{ n is not none }}",
                     ctx),
              "True False True True False");
    EXPECT_EQ(render("{{ s is string }} {{ d is mapping }} {{ l is iterable }} {{ i is number }} "
                     "{{ i is integer }} {{ f is float }} {{ l is sequence }} {{ s is mapping }}",
                     ctx),
              "True True True True True True True False");
    EXPECT_EQ(render("{{ i is odd }} {{ i is even }} {{ i is divisibleby 3 }} "
                     "{{ i is divisibleby(2) }} {{ s is equalto 'x' }} {{ true is true }} "
                     "{{ 'ab' is lower }} {{ i is eq 3 }}",
                     ctx),
              "True False True False True True True True");
    EXPECT_EQ(render("{{ not n is none }}", ctx), "False");  // not (n is none)
}

TEST(JinjaSyntax, Filters) {
    const std::string ctx =
        R"({"s": "  Hello World  ", "l": ["a", "b", "c"], "d": {"x": 1, "y": [2]},
                                "u": "ünï"})";
    EXPECT_EQ(
        render("[{{ s|trim }}] {{ s|trim|length }} {{ s|upper }}|{{ s|lower }}|{{ 'a b-c'|title }}",
               ctx),
        "[Hello World] 11   HELLO WORLD  |  hello world  |A B-C");
    EXPECT_EQ(render("{{ u|upper }} {{ 'ß'|upper }} {{ 'hello'|capitalize }}", ctx),
              "\xC3\x9CN\xC3\x8F SS Hello");
    EXPECT_EQ(
        render("{{ l|length }} {{ l|first }} {{ l|last }} {{ l|join(', ') }} {{ l|join }}", ctx),
        "3 a c a, b, c abc");
    EXPECT_EQ(
        render("{{ missing|default('dflt') }} {{ ''|default('e', true) }} {{ s|d('x')|trim }}",
               ctx),
        "dflt e Hello World");
    EXPECT_EQ(render("{{ 'a-b-a'|replace('a', 'X') }} {{ 'aaa'|replace('a', 'b', 2) }}"),
              "X-b-X bba");
    EXPECT_EQ(render("{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}", ctx), "x=1;y=[2];");
    EXPECT_EQ(render("{{ 'ab'|list }} {{ 12|string ~ '!' }} {{ '42'|int + 1 }} {{ 'x'|int }} "
                     "{{ 3.9|int }} {{ '2.5'|float }} {{ '<b>'|safe }} {{ -3|abs }}"),
              "['a', 'b'] 12! 43 0 3 2.5 <b> 3");
    EXPECT_EQ(render("{{ d|tojson }}|{{ 'é\"\\n'|tojson }}|{{ [1, none, true, 1.5]|tojson }}", ctx),
              "{\"x\": 1, \"y\": [2]}|\"\xC3\xA9\\\"\\n\"|[1, null, true, 1.5]");
    EXPECT_EQ(render("{{ d|tojson(indent=2) }}", ctx), "{\n  \"x\": 1,\n  \"y\": [\n    2\n  ]\n}");
    EXPECT_EQ(
        render("{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3]|reject('equalto', 2)|list }}"),
        "[1, 3] [1, 3]");
    EXPECT_EQ(render(R"({{ ms|selectattr('role', 'equalto', 'user')|map(attribute='c')|join }})",
                     R"({"ms": [{"role": "user", "c": "a"}, {"role": "bot", "c": "b"},
                                {"role": "user", "c": "c"}]})"),
              "ac");
}

TEST(JinjaSyntax, Methods) {
    const std::string ctx = R"({"s": "  a,b,,c  ", "d": {"k": "v"}})";
    EXPECT_EQ(
        render(
            "[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxhixx'.strip('x') }}]",
            ctx),
        "[a,b,,c] [a,b,,c  ] [  a,b,,c] [hi]");
    EXPECT_EQ(
        render("{{ s.strip().split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }}",
               ctx),
        "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c']");
    EXPECT_EQ(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} "
                     "{{ 'abc'.startswith(('x', 'a')) }} {{ 'Ab'.upper() }} {{ 'Ab'.lower() }} "
                     "{{ 'hello world'.title() }} {{ 'a.b'.replace('.', '/') }}"),
              "True True True AB ab Hello World a/b");
    EXPECT_EQ(
        render(
            "{% for k, v in d.items() %}{{ k }}:{{ v }}{% endfor %} {{ d.get('k') }} "
            "{{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list }}",
            ctx),
        "k:v v None dflt ['k'] ['v']");
}

TEST(JinjaStatements, IfElifElse) {
    const std::string tpl = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
    EXPECT_EQ(render(tpl, R"({"x": 1})"), "one");
    EXPECT_EQ(render(tpl, R"({"x": 2})"), "two");
    EXPECT_EQ(render(tpl, R"({"x": 9})"), "many");
    EXPECT_EQ(render("{% if missing %}a{% endif %}b"), "b");
}

TEST(JinjaStatements, ForLoopVariables) {
    const std::string ctx = R"({"l": ["a", "b", "c"]})";
    EXPECT_EQ(render("{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                     "{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}",
                     ctx),
              "103TrueFalse3 212FalseFalse3 321FalseTrue3 ");
    EXPECT_EQ(
        render("{% for x in l %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }};{% endfor %}", ctx),
        "<a>b;a<b>c;b<c>;");
    EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(render("{% for x in l if x != 'b' %}{{ x }}{{ loop.length }}{% endfor %}", ctx),
              "a2c2");
    EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}"), "3 7 ");
    EXPECT_EQ(render("{% for c in 'hé' %}[{{ c }}]{% endfor %}"), "[h][\xC3\xA9]");
    EXPECT_EQ(render("{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}"), "xy");
    EXPECT_EQ(render("{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}"
                     "{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
              "02");
    EXPECT_EQ(render("{% for i in range(1, 7, 2) %}{{ i }}{% endfor %}"), "135");
    // Nested loops each have their own `loop`.
    EXPECT_EQ(render("{% for a in [1, 2] %}{% for b in [1] %}{{ loop.index }}{% endfor %}"
                     "{{ loop.index }}{% endfor %}"),
              "1112");
}

TEST(JinjaStatements, SetScopingAndNamespace) {
    EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{% endfor %}{{ x }}"),
              "1");  // a set inside a loop does not leak
    EXPECT_EQ(render("{% set ns = namespace(x=1, found=false) %}{% for i in [1, 2] %}"
                     "{% set ns.x = ns.x + i %}{% set ns.found = true %}{% endfor %}{{ ns.x }} {{ "
                     "ns.found }}"),
              "4 True");
    EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
    EXPECT_EQ(render("{% set block %}in {{ 'side' }}{% endset %}[{{ block }}]"), "[in side]");
    EXPECT_EQ(render("{% set messages = messages[1:] %}{{ messages|length }}",
                     R"({"messages": [1, 2, 3]})"),
              "2");
}

TEST(JinjaStatements, MacrosAndGeneration) {
    EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                     "{{ greet('Ann') }} {{ greet('Bo', '?') }} {{ greet(punct='.', name='Cy') }}"),
              "Hi Ann! Hi Bo? Hi Cy.");
    EXPECT_EQ(render("{% set g = 'global' %}{% macro m() %}{{ g }}{% endmacro %}{{ m() }}"),
              "global");
    EXPECT_EQ(render("{% generation %}answer{% endgeneration %}"), "answer");
}

TEST(JinjaStatements, UndefinedBehavesAsJinjasDefault) {
    EXPECT_EQ(
        render("[{{ nothing }}]{% if nothing %}x{% endif %}{% for i in nothing %}y{% endfor %}"
               "{{ nothing|length }}"),
        "[]0");
    // Reading through an undefined value is an error in Jinja2, named with its place.
    EXPECT_EQ(render("\n  {{ nothing.attr }}"),
              "ERROR: line 2, column 13: 'nothing' is undefined, so it has no attribute 'attr'");
}

TEST(JinjaStatements, RaiseException) {
    EXPECT_EQ(render("ok\n{{ raise_exception('Roles must alternate') }}"),
              "ERROR: line 2, column 4: the template raised an error: Roles must alternate");
}

TEST(JinjaStatements, StrftimeNowOnlyWhenTheCallerGivesTheTime) {
    EXPECT_EQ(render("{{ strftime_now is defined }}"), "False");
    ws::chat::jinja::RenderOptions options;
    options.now = 1721952000;  // 2024-07-26 00:00 UTC
    EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}", "{}", options), "26 Jul 2024");
    EXPECT_EQ(render("{{ strftime_now('%n') }}", "{}", options).rfind("ERROR: line 1, column", 0),
              0u);
}

TEST(JinjaRefusals, NameLineColumnAndConstruct) {
    EXPECT_EQ(render("a\nb {{ x | wordwrap(10) }}"),
              "ERROR: line 2, column 10: the filter 'wordwrap' is not supported");
    EXPECT_EQ(render("{% include 'other.jinja' %}"),
              "ERROR: line 1, column 1: the statement 'include' is not supported");
    EXPECT_EQ(render("\n\n   {{ x is prime }}"),
              "ERROR: line 3, column 12: the test 'prime' is not supported");
    EXPECT_EQ(render("{{ 'x'.zfill(3) }}"),
              "ERROR: line 1, column 7: the method 'zfill' of a string is not supported");
    EXPECT_EQ(render("{{ lipsum() }}"),
              "ERROR: line 1, column 4: 'lipsum' is undefined, so it cannot be called");
    EXPECT_EQ(render("{% for x in l recursive %}{% endfor %}"),
              "ERROR: line 1, column 15: recursive for loops are not supported");
    EXPECT_EQ(render("{{ '%s' % 1 }}"),
              "ERROR: line 1, column 9: string formatting with '%' is not supported");
}

TEST(JinjaRefusals, SyntaxErrors) {
    EXPECT_EQ(render("{% if x %}never closed"),
              "ERROR: line 1, column 1: the 'if' opened here is never closed (endif)");
    EXPECT_EQ(render("text {{ x"),
              "ERROR: line 1, column 6: the tag opened here is never closed (}})");
    EXPECT_EQ(render("{% endfor %}"), "ERROR: line 1, column 1: 'endfor' closes no open block");
    EXPECT_EQ(render("{{ 1 + }}"),
              "ERROR: line 1, column 8: expected an expression, found the end of the tag");
    EXPECT_EQ(render("{{ 'unterminated }}"),
              "ERROR: line 1, column 4: the string starting here is never closed");
    EXPECT_EQ(render("{% frobnicate %}"),
              "ERROR: line 1, column 1: unknown statement 'frobnicate'");
    EXPECT_EQ(render("{{ a ? b }}"),
              "ERROR: line 1, column 6: the character '?' has no meaning inside a tag");
    EXPECT_EQ(render("{# open comment"),
              "ERROR: line 1, column 1: the comment is never closed (#})");
}

TEST(JinjaRefusals, RuntimeErrorsNameTheirPlace) {
    EXPECT_EQ(render("{{ 1 / 0 }}"), "ERROR: line 1, column 6: division by zero");
    EXPECT_EQ(render("{{ 'a' + 1 }}"),
              "ERROR: line 1, column 8: cannot apply '+' to a string and a integer");
    EXPECT_EQ(render("{% set x = 1 %}{% set x.y = 2 %}"),
              "ERROR: line 1, column 16: cannot set the attribute 'y' of 'x', a integer; only a "
              "namespace() takes attributes");
    EXPECT_EQ(render("{% for x in 5 %}{% endfor %}"),
              "ERROR: line 1, column 13: a integer cannot be iterated");
    EXPECT_EQ(render("{% break %}"), "ERROR: line 1, column 1: 'break' outside a for loop");
}

TEST(JinjaLimits, RunawayTemplatesAreRefusedNotRun) {
    EXPECT_EQ(render("{% for i in range(100000000) %}{% endfor %}").rfind("ERROR: line 1", 0), 0u);
    EXPECT_EQ(render("{{ 'x' * 1000000000000 }}"),
              "ERROR: line 1, column 8: the repetition makes a value too long");
    EXPECT_EQ(
        render("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}").rfind("ERROR: line 1", 0), 0u);
    std::string deep(500, '(');
    EXPECT_EQ(render("{{ " + deep + "1" + std::string(500, ')') + " }}").rfind("ERROR: line 1", 0),
              0u);
    // Values are weighed as they are built, and filters check the size before building.
    EXPECT_EQ(render("{{ ['a'] * 1000000 }}"),
              "ERROR: line 1, column 10: the repetition makes a value too long");
    EXPECT_EQ(render("{{ ('x' * 100000)|replace('', 'y' * 1000) }}"),
              "ERROR: line 1, column 19: the filter 'replace': replace would build a string longer "
              "than 67108864 bytes; refused as a runaway");
    EXPECT_EQ(render("{% set ns = namespace(l=[]) %}{% for i in range(20) %}"
                     "{% set ns.l = ns.l + ns.l + ['x' * 100000] %}{% endfor %}")
                  .rfind("ERROR: line 1, column ", 0),
              0u);
    // A namespace holding itself would be a reference cycle; deep nesting would exhaust the
    // stack when printed or freed.
    EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.me = [ns] %}"),
              "ERROR: line 1, column 30: a namespace cannot hold a namespace (the attribute 'me')");
    EXPECT_EQ(render("{% set ns = namespace(x=[]) %}{% for i in range(500) %}"
                     "{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}"),
              "ERROR: line 1, column 70: lists and dicts nest deeper than 100 levels; refused as a "
              "runaway");
    EXPECT_EQ(render("{{ 9223372036854775807 + 1 }}"),
              "ERROR: line 1, column 24: the integer overflows 64 bits");
}

}  // namespace
