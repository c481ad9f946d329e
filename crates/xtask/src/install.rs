pub fn main(_a: &[String]) -> Result<(), String> { Err("todo".into()) }
