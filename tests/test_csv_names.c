/* test_csv_names.c - CSV data as people have it: the label column and the features
 * by header name or number, word labels as classes (sorted, or a trained model's),
 * the header told from the first two rows, missing values and words among the
 * features refused by row and column, and csv:TRAIN,TEST sharing the training file's
 * classes. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/mem.h"
#include "data/data.h"
#include "test.h"
#include "tmpdir.h"

static void write_text(const char *name, const char *text)
{
    FILE *f = fopen(tmp(name), "wb");
    fwrite(text, 1, strlen(text), f);
    fclose(f);
}

/* The file text read with o (has_label and header filled in when 0). */
static cf_dataset *read_csv(const char *name, const char *text, cf_csv_opts o)
{
    write_text(name, text);
    o.has_label = 1;
    return cf_data_csv_load(tmp(name), &o);
}

static int has_names(const cf_dataset *d, const char *const *want, int n)
{
    const char *const *names;
    if (cf_dataset_class_names(d, &names) != n) return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], want[i])) return 0;
    return 1;
}

static const char *iris =
    "sepal_length,sepal_width,petal_length,petal_width,species\n"
    "5.1,3.5,1.4,0.2,setosa\n"
    "7.0,3.2,4.7,1.4,versicolor\n"
    "6.3,3.3,6.0,2.5,virginica\n"
    "4.9,3.0,1.4,0.2,setosa\n";

/* Word labels are classes sorted as strcmp sorts them; the header is told apart from
 * data even though every row has a word. */
TEST(word_labels)
{
    const char *text = "petal,colour,kind\n1,2,zebra\n3,4,Apple\n5,6,apple\n7,8,zebra\n9,10,\"apple\"\n";
    cf_dataset *d = read_csv("w.csv", text, (cf_csv_opts){.label = "kind", .header = -1});
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "  %s\n", cf_last_error());
        return;
    }
    static const char *const want[] = {"Apple", "apple", "zebra"};   /* 'A' < 'a' */
    CHECK(has_names(d, want, 3));
    CHECK(cf_dataset_count(d) == 5 && cf_dataset_classes(d) == 3);
    const float *y = cf_dataset_y(d), *x = cf_dataset_x(d);
    CHECK(y[0] == 2 && y[1] == 0 && y[2] == 1 && y[3] == 2 && y[4] == 1);   /* one pair of quotes off */
    CHECK(x[0] == 1 && x[1] == 2 && x[8] == 9);
    CHECK(cf_dataset_label_column(d) == 2 && strcmp(cf_dataset_column_name(d, 2), "kind") == 0);
    /* splits keep the names */
    cf_dataset *a, *b;
    CHECK(cf_dataset_split(d, 0.4, 1, &a, &b) == 0);
    CHECK(has_names(a, want, 3) && has_names(b, want, 3));
    cf_dataset_free(a);
    cf_dataset_free(b);
    cf_dataset_free(d);
    /* iris: the label last, by number from the end and by name: the same */
    d = read_csv("iris.csv", iris, (cf_csv_opts){.label_col = -1, .header = -1});
    cf_dataset *e = read_csv("iris.csv", iris, (cf_csv_opts){.label = "species", .header = -1});
    static const char *const species[] = {"setosa", "versicolor", "virginica"};
    CHECK(d && e && has_names(d, species, 3) && has_names(e, species, 3));
    CHECK(d && e && cf_dataset_count(d) == 4 && cf_dataset_count(e) == 4);
    CHECK(d && memcmp(cf_dataset_y(d), (float[]){0, 1, 2, 0}, 4 * sizeof(float)) == 0);
    CHECK(e && memcmp(cf_dataset_y(e), cf_dataset_y(d), 4 * sizeof(float)) == 0);
    cf_dataset_free(d);
    cf_dataset_free(e);
    /* no header: every row has a word in the same column, so row 1 is data */
    d = read_csv("nohead.csv", "5.1,3.5,setosa\n7.0,3.2,virginica\n", (cf_csv_opts){.label_col = -1, .header = -1});
    CHECK(d && cf_dataset_count(d) == 2 && cf_dataset_column_name(d, 0) == NULL);
    cf_dataset_free(d);
    /* numbers stay numbers: no class names */
    d = read_csv("num.csv", "a,label\n1,0\n2,2\n", (cf_csv_opts){.label = "label", .header = -1});
    CHECK(d && cf_dataset_class_names(d, NULL) == 0 && cf_dataset_classes(d) == 3);
    cf_dataset_free(d);
    CHECK(cf_memory_in_use() == 0);
}

/* Row 1 is a header when a column holds a non-number there and a number in row 2. */
TEST(header_rule)
{
    /* names over numbers */
    cf_dataset *d = read_csv("h.csv", "x,y\n1,2\n", (cf_csv_opts){.header = -1});
    CHECK(d && cf_dataset_count(d) == 1 && strcmp(cf_dataset_column_name(d, 0), "x") == 0);
    cf_dataset_free(d);
    /* one column decides: the others may be words in both rows */
    d = read_csv("h.csv", "x,kind\n1,cat\n2,dog\n", (cf_csv_opts){.label_col = -1, .header = -1});
    CHECK(d && cf_dataset_count(d) == 2 && cf_dataset_class_names(d, NULL) == 2);
    cf_dataset_free(d);
    /* a missing value in row 1 does not make it a header: it is data, and refused */
    d = read_csv("h.csv", "NA,1\n2,0\n", (cf_csv_opts){.label_col = -1, .header = -1});
    CHECK(d == NULL);
    CHECK_HAS(cf_last_error(), "h.csv:1: a missing value ('NA') in column 0");
    /* a header of numbers over word labels cannot be told from data: "label" is taken
       for a class (documented; header 1 says otherwise) */
    d = read_csv("h.csv", "0,1,label\n5,6,cat\n7,8,dog\n", (cf_csv_opts){.label_col = -1, .header = -1});
    static const char *const three[] = {"cat", "dog", "label"};
    CHECK(d && cf_dataset_count(d) == 3 && has_names(d, three, 3));
    cf_dataset_free(d);
    d = read_csv("h.csv", "0,1,label\n5,6,cat\n7,8,dog\n", (cf_csv_opts){.label_col = -1, .header = 1});
    CHECK(d && cf_dataset_count(d) == 2 && cf_dataset_class_names(d, NULL) == 2);
    cf_dataset_free(d);
    /* one row: a header when a field is not a number */
    d = read_csv("h.csv", "x,y\n", (cf_csv_opts){.header = -1});
    CHECK(d == NULL);
    CHECK_HAS(cf_last_error(), "h.csv: no data rows (only a header)");
    d = read_csv("h.csv", "\n\n1,2\n", (cf_csv_opts){.header = -1});
    CHECK(d && cf_dataset_count(d) == 1);
    cf_dataset_free(d);
    /* blank lines between the first two rows, and a header given */
    d = read_csv("h.csv", "a,b,c\n\n\n1,2,cat\n3,4,dog\n", (cf_csv_opts){.label = "c", .header = -1});
    CHECK(d && cf_dataset_count(d) == 2 && cf_dataset_x(d)[2] == 3);
    cf_dataset_free(d);
    d = read_csv("h.csv", "a,b,c\n1,2,cat\n", (cf_csv_opts){.label = "c", .header = 1});
    CHECK(d && cf_dataset_count(d) == 1);
    cf_dataset_free(d);
    CHECK(cf_memory_in_use() == 0);
}

/* --label-col and --features by name or number; the errors name what is wrong. */
TEST(columns_chosen)
{
    const char *text = "id,a,b,c,label\nx17,1,2,3,0\nx18,4,5,6,1\n";
    cf_dataset *d = read_csv("c.csv", text, (cf_csv_opts){.label = "label", .features = "c,a", .header = -1});
    CHECK(d && cf_dataset_sample_shape(d).d[0] == 2);
    CHECK(d && cf_dataset_x(d)[0] == 3 && cf_dataset_x(d)[1] == 1 && cf_dataset_x(d)[2] == 6 && cf_dataset_x(d)[3] == 4);
    CHECK(d && cf_dataset_y(d)[1] == 1 && cf_dataset_column_count(d) == 5 && cf_dataset_label_column(d) == 4);
    cf_dataset_free(d);
    /* numbers, 0-based and from the end; names and numbers mixed; blanks around them */
    d = read_csv("c.csv", text, (cf_csv_opts){.label = "-1", .features = " 3 , -3,a", .header = -1});
    CHECK(d && cf_dataset_sample_shape(d).d[0] == 3 && cf_dataset_x(d)[0] == 3 && cf_dataset_x(d)[1] == 2 &&
          cf_dataset_x(d)[2] == 1);
    cf_dataset_free(d);
    /* the id column, ignored, may hold anything */
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "label", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv:2: 'x17' is not a number (column 0 'id'); features are numbers, and a column of "
                               "words is not encoded");
    /* a name not in the header: the nearest, and the list */
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "lable", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv: the label column 'lable' is not in the header (did you mean 'label'?); the columns are: "
                               "id, a, b, c, label");
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "Label", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "(did you mean 'label'?)");
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "label", .features = "a,zzz", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv: the feature column 'zzz' is not in the header; the columns are: id, a");
    CHECK(strstr(cf_last_error(), "did you mean") == NULL);
    /* repeated, the label among the features, out of range, empty */
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "label", .features = "a,b,1", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv: column 1 'a' is among the features twice (the 1st and the 3rd of --features)");
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "label", .features = "a,label", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv: column 4 'label' is the label, so it cannot be a feature too");
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "label", .features = "a,5", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv: the feature column is 5, but the rows have 5 columns (0 to 4, or -5 to -1");
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "-6", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv: the label column is -6, but the rows have 5 columns");
    CHECK(read_csv("c.csv", text, (cf_csv_opts){.label = "label", .features = "a,,b", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv: an empty column name for a feature");
    /* a name for a file without a header */
    CHECK(read_csv("c.csv", "1,2,0\n3,4,1\n", (cf_csv_opts){.label = "label", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "c.csv: the label column 'label' is given by name, but the file has no header row "
                               "(line 1 is data)");
    CHECK(read_csv("c.csv", "1,2,0\n3,4,1\n", (cf_csv_opts){.label_col = -1, .features = "x", .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "the feature column 'x' is given by name, but the file has no header row");
    CHECK(cf_memory_in_use() == 0);
}

/* Words among the features, missing values, a label column of both numbers and
 * words: refused, naming the line, the column and the value. */
TEST(bad_values)
{
    CHECK(read_csv("v.csv", "a,b,y\n1,red,0\n", (cf_csv_opts){.label_col = -1, .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "v.csv:2: 'red' is not a number (column 1 'b'); features are numbers");
    const char *spell[] = {"", " ", "?", "NA", "na", "N/A", "NaN", "nan", "NULL", "null"};
    for (size_t i = 0; i < sizeof spell / sizeof *spell; i++) {
        char text[64], want[64];
        snprintf(text, sizeof text, "a,b,y\n1,2,0\n3,%s,1\n", spell[i]);
        CHECK(read_csv("v.csv", text, (cf_csv_opts){.label_col = -1, .header = -1}) == NULL);
        CHECK_HAS(cf_last_error(), "v.csv:3: a missing value (");
        CHECK_HAS(cf_last_error(), ") in column 1 'b'; cflux does not fill in missing values");
        if (*spell[i] != ' ' && *spell[i]) {
            snprintf(want, sizeof want, "('%s')", spell[i]);
            CHECK_HAS(cf_last_error(), want);
        }
    }
    CHECK(read_csv("v.csv", "a,b,y\n1,2,cat\n3,4,NA\n", (cf_csv_opts){.label_col = -1, .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "v.csv:3: a missing value ('NA') in the label, column 2 'y'");
    CHECK(read_csv("v.csv", "a,b,y\n1,2,cat\n3,4,7\n", (cf_csv_opts){.label_col = -1, .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "v.csv:3: the label column (column 2 'y') holds the number '7' here but words before "
                               "(line 2: 'cat'); a label column is all numbers (class indices or targets) or all words");
    CHECK(read_csv("v.csv", "a,b,y\n1,2,3\n3,4,cat\n", (cf_csv_opts){.label_col = -1, .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "v.csv:3: the label column (column 2 'y') holds the word 'cat' here but numbers before "
                               "(line 2: '3')");
    char longw[160] = "a,y\n1,";
    memset(longw + 6, 'w', 101);
    strcat(longw, "\n");
    CHECK(read_csv("v.csv", longw, (cf_csv_opts){.label_col = -1, .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "v.csv:2: the label 'wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww...' is longer than 100 bytes");
    CHECK(read_csv("v.csv", "a,y\n1,c\001t\n", (cf_csv_opts){.label_col = -1, .header = -1}) == NULL);
    CHECK_HAS(cf_last_error(), "v.csv:2: the label 'c\001t' holds a control character (column 1 'y')");
    CHECK(cf_memory_in_use() == 0);
}

/* With the classes known (a trained model's), the words are their indices, whatever
 * order and subset a file holds; a word not among them is an error. */
TEST(known_classes)
{
    static const char *const known[] = {"virginica", "setosa", "versicolor"};   /* not sorted: the model's order */
    cf_csv_opts o = {.label = "species", .header = -1, .class_names = known, .nclass_names = 3, .classes_of = "m.ckpt"};
    cf_dataset *d = read_csv("k.csv", "a,species\n1,setosa\n2,virginica\n3,setosa\n", o);
    CHECK(d && has_names(d, known, 3) && cf_dataset_classes(d) == 3);
    CHECK(d && memcmp(cf_dataset_y(d), (float[]){1, 0, 1}, 3 * sizeof(float)) == 0);
    cf_dataset_free(d);
    d = read_csv("k.csv", "a,species\n1,setosa\n2,rose\n", o);
    CHECK(d == NULL);
    CHECK_HAS(cf_last_error(), "k.csv:3: the label 'rose' is not one of the 3 classes of m.ckpt (virginica, setosa, "
                               "versicolor)");
    /* numbers are class indices still */
    d = read_csv("k.csv", "a,species\n1,2\n2,0\n", o);
    CHECK(d && cf_dataset_y(d)[0] == 2 && cf_dataset_class_names(d, NULL) == 0);
    cf_dataset_free(d);
    CHECK(cf_memory_in_use() == 0);
}

/* csv:TRAIN,TEST: the test file's words are the training file's classes. */
TEST(spec_train_test)
{
    write_text("tr.csv", iris);
    write_text("te.csv", "sepal_length,sepal_width,petal_length,petal_width,species\n"
                         "6.0,3.0,4.8,1.8,virginica\n5.0,3.4,1.5,0.2,setosa\n");
    char spec[600];
    snprintf(spec, sizeof spec, "csv:%s,%s", tmp("tr.csv"), tmp("te.csv"));
    cf_data_opts o = cf_data_defaults();
    o.label = "species";
    o.features = "petal_length,petal_width,sepal_length,sepal_width";
    cf_dataset *tr, *te;
    CHECK(cf_data_open_opts(spec, &o, &tr, &te) == 0);
    static const char *const species[] = {"setosa", "versicolor", "virginica"};
    CHECK(tr && te && has_names(tr, species, 3) && has_names(te, species, 3));
    CHECK(te && cf_dataset_y(te)[0] == 2 && cf_dataset_y(te)[1] == 0 && cf_dataset_classes(te) == 3);
    CHECK(te && cf_dataset_x(te)[0] == 4.8f && cf_dataset_x(te)[3] == 3.0f);
    cf_dataset_free(tr);
    cf_dataset_free(te);
    /* a class the training file lacks */
    write_text("te.csv", "sepal_length,sepal_width,petal_length,petal_width,species\n6.0,3.0,4.8,1.8,rose\n");
    CHECK(cf_data_open_opts(spec, &o, &tr, &te) == -1 && tr == NULL && te == NULL);
    CHECK_HAS(cf_last_error(), "te.csv:2: the label 'rose' is not one of the 3 classes of ");
    CHECK_HAS(cf_last_error(), "tr.csv (setosa, versicolor, virginica)");
    /* numbers in one file, words in the other */
    write_text("te.csv", "sepal_length,sepal_width,petal_length,petal_width,species\n6.0,3.0,4.8,1.8,2\n");
    CHECK(cf_data_open_opts(spec, &o, &tr, &te) == -1);
    CHECK_HAS(cf_last_error(), "te.csv: the labels are numbers, but those of ");
    /* the model's classes, given, for both files */
    static const char *const known[] = {"virginica", "versicolor", "setosa"};
    o.class_names = known;
    o.nclass_names = 3;
    write_text("te.csv", "sepal_length,sepal_width,petal_length,petal_width,species\n6.0,3.0,4.8,1.8,virginica\n");
    CHECK(cf_data_open_opts(spec, &o, &tr, &te) == 0);
    CHECK(tr && te && has_names(tr, known, 3) && has_names(te, known, 3));
    CHECK(tr && te && cf_dataset_y(tr)[0] == 2 && cf_dataset_y(te)[0] == 0);
    cf_dataset_free(tr);
    cf_dataset_free(te);
    /* the old entry points read word labels too */
    cf_dataset *d = cf_dataset_load_csv(tmp("tr.csv"), -1, -1);
    CHECK(d && has_names(d, species, 3));
    cf_dataset_free(d);
    CHECK(cf_memory_in_use() == 0);
}

int main(void)
{
    if (tmpdir_make("csv-names")) return 1;
    RUN(word_labels);
    RUN(header_rule);
    RUN(columns_chosen);
    RUN(bad_values);
    RUN(known_classes);
    RUN(spec_train_test);
    tmpdir_remove();
    return test_summary("csv_names");
}
