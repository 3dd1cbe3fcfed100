//! The one table writer of every workflow: columns padded to their widest
//! cell, numbers right-aligned, text left-aligned; or as a markdown table
//! for docs/ (the benchmark's).

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Align {
    Left,
    Right,
}

pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// `columns`: (title, alignment) per column.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            header: columns.iter().map(|c| c.0.to_string()).collect(),
            align: columns.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<S: ToString>(&mut self, cells: &[S]) {
        assert_eq!(cells.len(), self.header.len(), "a row of {} cells in a table of {} columns", cells.len(), self.header.len());
        self.rows.push(cells.iter().map(|c| c.to_string()).collect());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, one line per row after the header, each line
    /// ending in '\n', no trailing blanks.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|i| std::iter::once(&self.header[i]).chain(self.rows.iter().map(|r| &r[i])).map(|s| s.chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for line in std::iter::once(&self.header).chain(self.rows.iter()) {
            let mut text = String::new();
            for (i, cell) in line.iter().enumerate() {
                if i > 0 {
                    text.push_str("  ");
                }
                let pad = widths[i] - cell.chars().count();
                match self.align[i] {
                    Align::Left => {
                        text.push_str(cell);
                        text.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        text.push_str(&" ".repeat(pad));
                        text.push_str(cell);
                    }
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

impl Table {
    /// The table in markdown: a header row, an alignment row (`---:` for
    /// numbers), one row per line; a '|' inside a cell is escaped.
    pub fn render_markdown(&self) -> String {
        let line = |cells: &[String]| format!("| {} |\n", cells.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | "));
        let mut out = line(&self.header);
        let rule: Vec<String> = self.align.iter().map(|a| if *a == Align::Right { "---:".to_string() } else { "---".to_string() }).collect();
        out.push_str(&format!("|{}|\n", rule.join("|")));
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_pad_to_the_widest_cell_and_numbers_align_right() {
        let mut t = Table::new(&[("step", Align::Left), ("passed", Align::Right), ("result", Align::Left)]);
        t.row(&["loaders", "6", "ok"]);
        t.row(&["gpu_context", "10", "FAILED"]);
        assert_eq!(t.render(), "step         passed  result\nloaders           6  ok\ngpu_context      10  FAILED\n");
    }

    #[test]
    fn markdown_marks_number_columns_and_escapes_bars() {
        let mut t = Table::new(&[("size", Align::Left), ("fps", Align::Right)]);
        t.row(&["3840x2160", "1574.9"]);
        t.row(&["a|b", "1"]);
        assert_eq!(t.render_markdown(), "| size | fps |\n|---|---:|\n| 3840x2160 | 1574.9 |\n| a\\|b | 1 |\n");
    }

    #[test]
    #[should_panic(expected = "a row of 1 cells in a table of 2 columns")]
    fn a_short_row_is_refused() {
        Table::new(&[("a", Align::Left), ("b", Align::Left)]).row(&["x"]);
    }
}
