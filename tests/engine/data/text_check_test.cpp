// SPDX-License-Identifier: GPL-3.0-or-later
// checkText / readCorpus on files that are not plain text: real files of each format (the
// fixtures were written by Python's zipfile, zlib and gzip modules and by hand for the PDF; `file`
// names each as its format) and the system's own ELF executable are named for what they are,
// while real UTF-8 text in many scripts, Latin-1 prose and the bundled corpus pass as text.
#include "engine/data/text_check.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/data/corpus.h"
#include "support/temp_dir.h"

namespace ws::data {
namespace {
namespace fs = std::filesystem;

const fs::path kFixtures = WAFER_DATA_FIXTURES;

std::string readBytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return std::move(text).str();
}

std::string kindOf(std::string_view content) {
    const auto what = checkText(content);
    return what ? what->kind : std::string("text");
}

TEST(TextCheck, NamesRealFilesOfCommonFormats) {
    EXPECT_EQ(kindOf(readBytes(kFixtures / "report.pdf")), "a PDF document");
    EXPECT_EQ(kindOf(readBytes(kFixtures / "letter.docx")), "a Word document (DOCX)");
    EXPECT_EQ(kindOf(readBytes(kFixtures / "sheet.xlsx")), "an Excel workbook (XLSX)");
    EXPECT_EQ(kindOf(readBytes(kFixtures / "notes.zip")), "a ZIP archive");
    EXPECT_EQ(kindOf(readBytes(kFixtures / "pixel.png")), "a PNG image");
    EXPECT_EQ(kindOf(readBytes(kFixtures / "notes.txt.gz")), "a gzip archive");
    // A JFIF header as every camera and editor writes it.
    EXPECT_EQ(kindOf(std::string("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00", 14)),
              "a JPEG image");
    const auto pdf = checkText(readBytes(kFixtures / "report.pdf"));
    ASSERT_TRUE(pdf);
    EXPECT_EQ(pdf->advice, "export it as plain text (.txt) first");
}

TEST(TextCheck, NamesTheSystemsOwnExecutable) {
    if (!fs::exists("/bin/true")) GTEST_SKIP() << "no /bin/true on this system";
    EXPECT_EQ(kindOf(readBytes("/bin/true")), "an ELF executable or library");
    auto fromFile = checkTextFile("/bin/true", 4096);  // a prefix is enough for the signature
    ASSERT_TRUE(fromFile.ok()) << fromFile.error().message;
    ASSERT_TRUE(fromFile->has_value());
    EXPECT_EQ((*fromFile)->kind, "an ELF executable or library");
}

TEST(TextCheck, RealTextInManyScriptsIsText) {
    const std::string multilingual = readBytes(kFixtures / "multilingual.txt");
    ASSERT_GT(multilingual.size(), 500u);
    EXPECT_EQ(kindOf(multilingual), "text");
    // Read only in part, a character cut at the end of the prefix still reads as text.
    for (size_t limit : {size_t(101), size_t(302), size_t(503)}) {
        auto prefix = checkTextFile(kFixtures / "multilingual.txt", limit);
        ASSERT_TRUE(prefix.ok());
        EXPECT_FALSE(prefix->has_value()) << limit << ": " << (*prefix)->kind;
    }
    EXPECT_EQ(kindOf(readBytes(fs::path(WAFER_CORPUS_DIR) / "kjv-03-ruth.txt")), "text");
    // Latin-1 prose (an accented letter every few words) is text in another encoding.
    EXPECT_EQ(kindOf("Le caf\xe9 est ferm\xe9 le lundi; la r\xe9paration du v\xe9lo attendra.\n"),
              "text");
    EXPECT_EQ(kindOf("tabs\tand\r\nwindows line ends, a form feed \f and \x1b[1mbold\x1b[0m\n"),
              "text");
    EXPECT_EQ(kindOf(""), "text");
}

TEST(TextCheck, NulBytesControlCharactersAndUtf16AreNotText) {
    EXPECT_EQ(kindOf(std::string("a table\0of\0records\0", 19)), "binary data (3 NUL bytes)");
    std::string utf16;
    for (char c : std::string("plain words in UTF-16")) utf16 += std::string{c, '\0'};
    EXPECT_EQ(kindOf(utf16), "UTF-16 text");
    EXPECT_EQ(kindOf(std::string("\xff\xfeh\0i\0", 6)), "UTF-16 text");  // with its byte order mark
    std::string noisy;
    for (int i = 0; i < 200; ++i) noisy += char(1 + (i * 37) % 250);  // no NUL, mostly invalid
    EXPECT_NE(kindOf(noisy).find("binary data ("), std::string::npos) << kindOf(noisy);
}

TEST(TextCheck, ReadCorpusRefusesNonTextNamingTheFileUnlessAllowed) {
    testing::TempDir dir;
    fs::copy_file(kFixtures / "report.pdf", dir / "report.pdf");
    auto refused = readCorpus({(dir / "report.pdf").string()});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("report.pdf' looks like a PDF document, not plain "
                                           "text: export it as plain text (.txt) first"),
              std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().message.find("allow_binary"), std::string::npos);

    CorpusOptions insist;
    insist.allowNonText = true;
    auto allowed = readCorpus({(dir / "report.pdf").string()}, insist);
    ASSERT_TRUE(allowed.ok()) << allowed.error().message;
    EXPECT_EQ(*allowed, readBytes(kFixtures / "report.pdf"));

    // A folder's .txt that is really a zip is named too, with the hint given.
    fs::create_directories(dir / "texts");
    std::ofstream(dir / "texts" / "a.txt") << "real text\n";
    fs::copy_file(kFixtures / "letter.docx", dir / "texts" / "b.txt");
    CorpusOptions hinted;
    hinted.allowHint = "pass --allow-binary";
    auto inFolder = readCorpus({(dir / "texts").string()}, hinted);
    ASSERT_FALSE(inFolder.ok());
    EXPECT_NE(inFolder.error().message.find("b.txt' looks like a Word document (DOCX)"),
              std::string::npos)
        << inFolder.error().message;
    EXPECT_NE(inFolder.error().message.find("(pass --allow-binary)"), std::string::npos);
}

}  // namespace
}  // namespace ws::data
